import { Body, Controller, Get, Put } from '@nestjs/common';
import { Workspace, WorkspaceContext } from 'src/platform/access/context';
import { Action } from 'src/platform/access/decorators';
import { Answers, Returns } from 'src/common/http/documented';
import { PRICING_SCHEMA } from 'src/modules/model-providers/model-providers.responses';
import { ReplacePricingDto } from 'src/modules/model-providers/dto/pricing.dto';
import { PricingService } from 'src/modules/model-providers/pricing.service';

@Controller('api/v1/workspaces/:ws/pricing')
export class PricingController {
  constructor(private readonly pricing: PricingService) {}

  @Get()
  @Returns(PRICING_SCHEMA)
  @Answers(500, '`workspace publication state is unavailable`')
  @Action('workspace.read')
  get(@Workspace() ws: WorkspaceContext) {
    return this.pricing.get(ws);
  }

  @Put()
  @Returns(PRICING_SCHEMA)
  @Answers(422, 'A model outside the pattern rules, or `model must be unique in the pricebook`', 'ValidationError')
  @Action('pricing.write')
  replace(@Workspace() ws: WorkspaceContext, @Body() body: ReplacePricingDto) {
    return this.pricing.replace(ws, body);
  }
}
