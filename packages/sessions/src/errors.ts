/**
 * What a session operation refuses, said in session terms. Refusals are part of what a session
 * does (a full write queue, a model too small for a request, a tenant at its cap), so they are
 * decided here; how each is answered on the wire (status, contract code, headers) is the API's
 * error handler's business. The messages are the words clients read, so they are written here.
 */
export abstract class SessionError extends Error {
  constructor(message: string) {
    super(message);
    // Logs and test failures name the refusal, not a bare `Error`.
    this.name = new.target.name;
  }
}

/** Something the client named does not exist (or belongs to another tenant, which is the same). */
export class NotFound extends SessionError {
  constructor(readonly what: 'session' | 'compaction' | 'call' | 'media') {
    super(`${what} not found`);
  }
}

export class SessionNotFound extends NotFound {
  constructor() {
    super('session');
  }
}

export class CompactionNotFound extends NotFound {
  constructor() {
    super('compaction');
  }
}

/** A tool call's id that names no stored call of the session. */
export class CallNotFound extends NotFound {
  constructor() {
    super('call');
  }
}

/** A media id that names no stored image or document of the session. */
export class MediaNotFound extends NotFound {
  constructor() {
    super('media');
  }
}

/** One field of an operation's input that cannot be used, named as the client wrote it. */
export interface InputIssue {
  /** The field as `body.model.contextWindow` (the input's part, then the path). */
  path: string;
  message?: string | undefined;
}

/**
 * Input the session cannot act on: a policy that does not resolve, model limits that contradict
 * each other, a usage report no turn can have made. `issues` names the fields, when known.
 */
export class InvalidInput extends SessionError {
  constructor(
    message: string,
    readonly issues?: InputIssue[],
  ) {
    super(message);
  }

  /** Refused fields, with a message that lists each: `invalid request: body.x: why; …`. */
  static ofIssues(issues: InputIssue[]): InvalidInput {
    const summary = issues.map((i) => `${i.path}: ${i.message}`).join('; ');
    return new InvalidInput(`invalid request: ${summary}`, issues);
  }

  /**
   * Refused fields as a validator reports them: each `instancePath` a JSON pointer
   * (`/messages/0/role`) into the input `part` (`body`), named `body.messages.0.role`.
   */
  static atPointers(
    part: string,
    issues: Array<{ instancePath: string; message?: string | undefined }>,
  ): InvalidInput {
    return InvalidInput.ofIssues(
      issues.map((v) => ({ path: `${part}${v.instancePath.replace(/\//g, '.')}`, message: v.message })),
    );
  }
}

/** A large append's body that is not JSON at all (the transport left it unparsed). */
export class UnparsableBody extends SessionError {
  constructor() {
    super('the append body is not valid JSON');
  }
}

/** Why a write cannot be done as asked; each tells the client whether retrying can help. */
export type ConflictReason =
  /** A create with a session id that holds a session created from another body. */
  | 'session_exists'
  /** A create whose id was taken, then released before it could be read: retrying works. */
  | 'session_id_released'
  /** The session's model changed under an append, again and again: retrying works. */
  | 'model_kept_changing';

export class Conflict extends SessionError {
  constructor(
    readonly reason: ConflictReason,
    message: string,
  ) {
    super(message);
  }
}

/** More than this process or the tenant may do now; `retryAfterSeconds` says when to try again. */
export class TooManyRequests extends SessionError {
  constructor(
    message: string,
    readonly retryAfterSeconds: number,
  ) {
    super(message);
  }
}

/** The session's write queue in this process is full (see `SessionWriteQueue`). */
export class SessionWritesQueued extends TooManyRequests {}

/** This process holds as many large append bodies as it may (see `LargeAppendSlots`). */
export class LargeAppendsBusy extends TooManyRequests {}

/** A tool call's stored output was cleared by the retention purge. */
export class CallOutputPurged extends SessionError {
  constructor(readonly purgedAt: Date) {
    super('the output of this call was purged by retention');
  }
}

/** The live event channel (Redis) did not confirm a subscription in time. */
export class EventsUnavailable extends SessionError {
  constructor() {
    super('the event stream is unavailable (Redis)');
  }
}
