import { Controller, Get } from '@nestjs/common';
import { Public } from 'src/common/access/decorators';
import { Returns } from 'src/common/http/documented';
import { HEALTH_SCHEMA } from 'src/modules/health/health.responses';

@Controller('healthz')
export class HealthController {
  @Get()
  @Returns(HEALTH_SCHEMA)
  @Public()
  health() {
    return { ok: true };
  }
}
