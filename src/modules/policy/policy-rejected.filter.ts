import { ArgumentsHost, Catch, ExceptionFilter } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { PolicyRejectedError } from 'src/modules/policy/policy.service';

/** A publish whose draft does not compile: 422 with the policy document (its diagnostics) as the body. */
@Catch(PolicyRejectedError)
export class PolicyRejectedFilter implements ExceptionFilter {
  constructor(private readonly adapterHost: HttpAdapterHost) {}

  catch(exception: PolicyRejectedError, host: ArgumentsHost): void {
    this.adapterHost.httpAdapter.reply(host.switchToHttp().getResponse(), exception.document, 422);
  }
}
