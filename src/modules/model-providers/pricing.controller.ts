import { Body, Controller, Get, Put } from '@nestjs/common';
import { Workspace, WorkspaceContext } from 'src/common/access/context';
import { Action } from 'src/common/access/decorators';
import { ReplacePricingDto } from 'src/modules/model-providers/dto/pricing.dto';
import { PricingService } from 'src/modules/model-providers/pricing.service';

@Controller('api/v1/workspaces/:ws/pricing')
export class PricingController {
  constructor(private readonly pricing: PricingService) {}

  @Get()
  @Action('workspace.read')
  get(@Workspace() ws: WorkspaceContext) {
    return this.pricing.get(ws);
  }

  @Put()
  @Action('pricing.write')
  replace(@Workspace() ws: WorkspaceContext, @Body() body: ReplacePricingDto) {
    return this.pricing.replace(ws, body);
  }
}
