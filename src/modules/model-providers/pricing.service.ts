import { Injectable, OnModuleInit } from '@nestjs/common';
import { WorkspaceContext } from 'src/platform/access/context';
import { WorkspaceAccess } from 'src/platform/access/workspace-access.service';
import { FieldError, FieldValidationError } from 'src/common/http/errors';
import { AuditService } from 'src/modules/audit/audit.service';
import { Price, PricingRow, toPricebookPart, toPricingDocument } from 'src/modules/model-providers/dto/pricing.document';
import { ReplacePricingDto } from 'src/modules/model-providers/dto/pricing.dto';
import { PricebooksRepository } from 'src/modules/model-providers/pricebooks.repository';
import { modelPatternProblem } from 'src/modules/model-providers/model-names';
import { PublicationService } from 'src/modules/publication/publication.service';
import { SnapshotRegistry } from 'src/modules/publication/snapshot.registry';

/**
 * The workspace pricebook: per model name or pattern, integer micro-USD per million input,
 * output, cached and reasoning tokens. Replaced as a whole (never merged), published in the
 * snapshot as `pricebook`; the gateway prices reservations and usage with it.
 */
@Injectable()
export class PricingService implements OnModuleInit {
  constructor(
    private readonly pricebooks: PricebooksRepository,
    private readonly access: WorkspaceAccess,
    private readonly audit: AuditService,
    private readonly publications: PublicationService,
    private readonly snapshots: SnapshotRegistry,
  ) {}

  onModuleInit(): void {
    this.snapshots.register('pricebook', async (manager, ws) => {
      const row = await this.pricebooks.find(ws.id, manager);
      return row ? toPricebookPart(row.revision, row.prices) : null;
    });
  }

  async get(ws: WorkspaceContext) {
    return toPricingDocument(ws.id, await this.read(ws.id));
  }

  /** Validates every entry, then replaces the pricebook under the workspace lock: revision + 1, audit, staged snapshot. */
  async replace(ctx: WorkspaceContext, body: ReplacePricingDto) {
    const errors: FieldError[] = [];
    const seen = new Set<string>();
    body.prices.forEach((entry, i) => {
      const problem = modelPatternProblem(entry.model);
      if (problem) errors.push({ loc: ['body', 'prices', i, 'model'], msg: `model ${problem}`, type: 'value_error' });
      else if (seen.has(entry.model)) errors.push({ loc: ['body', 'prices', i, 'model'], msg: 'model must be unique in the pricebook', type: 'value_error' });
      seen.add(entry.model);
    });
    if (errors.length > 0) throw new FieldValidationError(errors);
    const prices: Price[] = body.prices
      .map((p) => ({
        model: p.model,
        input_micros_usd_per_mtok: p.input_micros_usd_per_mtok,
        output_micros_usd_per_mtok: p.output_micros_usd_per_mtok,
        cached_micros_usd_per_mtok: p.cached_micros_usd_per_mtok,
        reasoning_micros_usd_per_mtok: p.reasoning_micros_usd_per_mtok,
      }))
      .sort((a, b) => (a.model < b.model ? -1 : 1));

    const written = await this.access.mutate(ctx, async (tx, ws) => {
      // Under the workspace lock no other writer can create the pricebook between the find and the insert.
      const saved = await this.pricebooks.replace(tx.manager, ws.id, prices, ws.operator.userId);
      const version = await this.publications.stage(tx, ws.id, 'pricing.replace');
      await this.audit.record(tx, {
        workspaceId: ws.id,
        actor: ws.operator,
        action: 'pricing.replace',
        target: ws.id,
        detail: { snapshot_version: version },
      });
      return { revision: saved.revision, updated_at: saved.updatedAt, snapshot_version: version };
    });
    // After commit (and the publication attempt that follows it): how far the staged snapshot got.
    const counters = await this.read(ctx.id);
    return toPricingDocument(ctx.id, { ...written, prices, published_version: counters.published_version });
  }

  /** The pricebook (nulls when none is stored) with the workspace's publication counters. */
  private async read(workspaceId: string): Promise<PricingRow> {
    const versions = await this.publications.versions(workspaceId);
    const book = await this.pricebooks.find(workspaceId);
    return { revision: book?.revision ?? null, prices: book?.prices ?? null, updated_at: book?.updatedAt ?? null, ...versions };
  }
}
