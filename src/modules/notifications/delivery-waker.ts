import { Injectable } from '@nestjs/common';

/** Lets a commit on this process start delivery at once instead of at the dispatcher's next tick. */
@Injectable()
export class DeliveryWaker {
  private listener: (() => void) | null = null;

  onWake(listener: () => void): void {
    this.listener = listener;
  }

  wake(): void {
    this.listener?.();
  }
}
