import { Controller, Get } from '@nestjs/common';
import { Public } from 'src/common/access/decorators';

@Controller('healthz')
export class HealthController {
  @Get()
  @Public()
  health() {
    return { ok: true };
  }
}
