import { LargeAppendsBusy } from '../errors';

/**
 * Large appends a process holds at once, from their body's arrival to the end of their write:
 * each keeps its body and its serialised rows (twice its size) while it waits for the worker
 * thread and for its session's earlier writes. Past this a large append is refused (with when
 * to retry), so that the process's memory stays bounded (four 31 MiB bodies: ~250 MiB).
 */
export const LARGE_APPENDS_IN_FLIGHT = 4;

/** Seconds a refused large append is told to wait: about what one takes to prepare and write. */
export const LARGE_APPEND_RETRY_AFTER_SECONDS = 2;

/** A count of large appends in flight, refusing past its limit. */
export class LargeAppendSlots {
  private taken = 0;

  constructor(private readonly max = LARGE_APPENDS_IN_FLIGHT) {}

  /** Takes a slot (release it once the append is done), or throws {@link LargeAppendsBusy}. */
  take(): () => void {
    if (this.taken >= this.max) {
      throw new LargeAppendsBusy(
        'too many large appends are in progress on this server; retry shortly',
        LARGE_APPEND_RETRY_AFTER_SECONDS,
      );
    }
    this.taken += 1;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.taken -= 1;
    };
  }

  get inFlight(): number {
    return this.taken;
  }
}
