import type { ClaimedDelivery } from 'src/modules/notifications/notification-messages.repository';

/** POSTs in flight on this process, in all and to one endpoint: a hanging receiver holds only its own share. */
export const MAX_IN_FLIGHT = 128;
export const MAX_PER_ENDPOINT = 16;
/**
 * Deliveries claimed ahead of a free POST slot, for an endpoint whose latest attempt succeeded
 * within FAST_MS (its next POST starts as soon as one answers, not after a claim's round trip).
 */
export const AHEAD = 240;
export const FAST_MS = 250;
/** A claimed delivery not started within this is released (a receiver that slowed down); far inside the lease. */
export const QUEUE_MAX_MS = 5_000;
/** Deliveries held on this process at most (queued, posting, or waiting for their record to commit). */
export const MAX_HELD = 1024;
/** How often at most a wake's claim leaves out endpoints with a backlog (a statement of its own while they are hidden). */
export const FAIR_MS = 50;
/** Rows one claim takes at most; a lane is left out of a claim unless CLAIM_MIN (a fast one: AHEAD / 2) still fit. */
export const CLAIM_LIMIT = 256;
export const CLAIM_MIN = 8;

/**
 * This process's deliveries to one endpoint: claimed and waiting for a POST slot (in claim order),
 * being POSTed, and answered but not yet recorded (the record, and a disable it causes, committing).
 */
export interface Lane {
  queue: { delivery: ClaimedDelivery; claimedAt: number }[];
  posting: number;
  settling: number;
  /** The latest attempt succeeded within FAST_MS: deliveries may be claimed AHEAD. */
  fast: boolean;
  /** The last claim filled this lane's room (or stopped at its limit): more may be due; room freed claims again. */
  more: boolean;
  /** Answered 410: nothing more starts; the endpoint is being disabled. */
  gone: boolean;
}

export const newLane = (): Lane => ({ queue: [], posting: 0, settling: 0, fast: false, more: false, gone: false });
export const held = (l: Lane) => l.queue.length + l.posting + l.settling;
/** How many more deliveries this lane may be given. */
export const room = (l: Lane) => (l.gone ? 0 : MAX_PER_ENDPOINT + (l.fast ? AHEAD : 0) - held(l));
/** Whether a claim for this lane is worth a statement (a fast lane's refills are larger). */
export const claimable = (l: Lane) => room(l) >= (l.fast ? AHEAD / 2 : CLAIM_MIN);
