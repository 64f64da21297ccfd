import { NotificationAttempt } from 'src/modules/notifications/entities/notification-attempt.entity';
import { NotificationDelivery } from 'src/modules/notifications/entities/notification-delivery.entity';
import { NotificationEndpoint } from 'src/modules/notifications/entities/notification-endpoint.entity';
import { NotificationMessage } from 'src/modules/notifications/entities/notification-message.entity';
import { SnapshotContent } from 'src/modules/publication/entities/snapshot-content.entity';
import { SnapshotInstance } from 'src/modules/publication/entities/snapshot-instance.entity';
import { SnapshotVersion } from 'src/modules/publication/entities/snapshot-version.entity';
import { User } from 'src/modules/identity/entities/user.entity';
import { OrganizationMember } from 'src/modules/workspaces/entities/organization-member.entity';
import { Organization } from 'src/modules/workspaces/entities/organization.entity';
import { WorkspaceMember } from 'src/modules/workspaces/entities/workspace-member.entity';
import { Workspace } from 'src/modules/workspaces/entities/workspace.entity';
import { AuditEvent } from 'src/modules/audit/entities/audit-event.entity';
import { AuditChainHead } from 'src/modules/audit/entities/audit-chain-head.entity';
import { AuditCheckpoint } from 'src/modules/audit/entities/audit-checkpoint.entity';
import { ControlSigningKey } from 'src/common/signing/control-signing-key.entity';
import { ControlSigningPublicKey } from 'src/common/signing/control-signing-public-key.entity';
import { VirtualKey } from 'src/modules/keys/entities/virtual-key.entity';
import { VirtualKeyRemoval } from 'src/modules/keys/entities/virtual-key-removal.entity';
import { VirtualKeyUsage } from 'src/modules/keys/entities/virtual-key-usage.entity';
import { PolicyRevision } from 'src/modules/policy/entities/policy-revision.entity';
import { Policy } from 'src/modules/policy/entities/policy.entity';
import { ApprovalPolicyRevision } from 'src/modules/approvals/entities/approval-policy-revision.entity';
import { ApprovalPolicy } from 'src/modules/approvals/entities/approval-policy.entity';
import { ApprovalVote } from 'src/modules/approvals/entities/approval-vote.entity';
import { Approval } from 'src/modules/approvals/entities/approval.entity';
import { ReceiptCounter } from 'src/modules/receipts/entities/receipt-counter.entity';
import { ReceiptHead } from 'src/modules/receipts/entities/receipt-head.entity';
import { ReceiptRevision } from 'src/modules/receipts/entities/receipt-revision.entity';
import { UsageEvent } from 'src/modules/usage/entities/usage-event.entity';
import { UsageGap } from 'src/modules/usage/entities/usage-gap.entity';
import { UsageRollup } from 'src/modules/usage/entities/usage-rollup.entity';
import { UsageMinuteRollup } from 'src/modules/usage/entities/usage-minute-rollup.entity';
import { ParkedStreamEntry } from 'src/modules/streams/entities/parked-stream-entry.entity';
import { CatalogSession } from 'src/modules/connections/entities/catalog-session.entity';
import { Connection } from 'src/modules/connections/entities/connection.entity';
import { OAuthState } from 'src/modules/connections/entities/oauth-state.entity';
import { Pricebook } from 'src/modules/model-providers/entities/pricebook.entity';
import { RouteQualifier } from 'src/modules/routing/entities/route-qualifier.entity';
import { WorkerPlan } from 'src/modules/workers/entities/worker-plan.entity';
import { WorkerRevision } from 'src/modules/workers/entities/worker-revision.entity';
import { WorkerRunArtifact } from 'src/modules/workers/entities/worker-run-artifact.entity';
import { WorkerRun } from 'src/modules/workers/entities/worker-run.entity';
import { WorkerSessionProfile } from 'src/modules/workers/entities/worker-session-profile.entity';
import { Worker } from 'src/modules/workers/entities/worker.entity';
import { WorkflowRevision } from 'src/modules/workers/entities/workflow-revision.entity';
import { Workflow } from 'src/modules/workers/entities/workflow.entity';
import { WebhookEvidence } from 'src/modules/webhooks/entities/webhook-evidence.entity';
import { WebhookSubscription } from 'src/modules/webhooks/entities/webhook-subscription.entity';

/**
 * Every entity, one per table the migrations create (partitions and `typeorm_migrations` aside). The
 * application, the migration runner and the TypeORM CLI (ormconfig.ts) all build their data source
 * from this list; each module registers its own with `TypeOrmModule.forFeature` for repositories.
 * test/entities.e2e-spec.ts proves it agrees with the migrated schema column by column.
 */
export const ENTITIES = [
  User,
  OrganizationMember,
  Organization,
  WorkspaceMember,
  Workspace,
  AuditEvent,
  AuditChainHead,
  AuditCheckpoint,
  ControlSigningKey,
  ControlSigningPublicKey,
  VirtualKey,
  VirtualKeyRemoval,
  VirtualKeyUsage,
  PolicyRevision,
  Policy,
  ApprovalPolicyRevision,
  ApprovalPolicy,
  ApprovalVote,
  Approval,
  ReceiptCounter,
  ReceiptHead,
  ReceiptRevision,
  UsageEvent,
  UsageGap,
  UsageRollup,
  UsageMinuteRollup,
  ParkedStreamEntry,
  CatalogSession,
  Connection,
  OAuthState,
  Pricebook,
  RouteQualifier,
  WorkerPlan,
  WorkerRevision,
  WorkerRunArtifact,
  WorkerRun,
  WorkerSessionProfile,
  Worker,
  WorkflowRevision,
  Workflow,
  WebhookEvidence,
  WebhookSubscription,
  SnapshotContent,
  SnapshotVersion,
  SnapshotInstance,
  NotificationEndpoint,
  NotificationMessage,
  NotificationDelivery,
  NotificationAttempt,
];
