import pg from 'pg';
import type { SQL } from 'drizzle-orm';
import type { Db } from './client';
import { bindMessagePieces } from './bind-message';
import { compileNamed, type NamedStatement } from './prepared';

/**
 * Runs `queries` in ONE round trip, as ONE transaction: each is sent as a named prepared
 * statement (Parse once per connection, then Bind/Describe/Execute), all before a single Sync.
 * Postgres runs the messages up to a Sync as an implicit transaction: every statement sees the
 * ones before it (and, read committed, takes a fresh snapshot), locks are held to the end, and
 * when one fails the rest are skipped and all of it is rolled back. That is what
 * `begin; a; b; commit` does in four round trips. node-postgres sends a Sync after every query
 * (its client option `pipeline` too: there each query is a transaction of its own), so this
 * pipeline is a submittable of its own (`Pipeline`).
 *
 * Same rules as `executePrepared`: fixed statement texts, values as parameters. Rows come back
 * as drizzle's driver returns them (timestamps as text), so the same mappers read both.
 */
export async function executePipelined<Row extends Record<string, unknown> = Record<string, unknown>>(
  db: Db,
  queries: SQL[],
): Promise<Array<{ rows: Row[] }>> {
  const client = await db.$client.connect();
  let failure: Error | undefined;
  try {
    // Postgres commits at the Sync only outside a transaction: on a connection left inside one
    // the statements would join it, and nothing would be committed.
    if (client.getTransactionStatus() !== 'I') {
      throw new Error('executePipelined: the pooled connection is inside a transaction');
    }
    return await sendPipeline<Row>(client, queries);
  } catch (error) {
    failure = error as Error;
    throw error;
  } finally {
    // As pg-pool's own `pool.query` does, a connection that saw an error is not reused: after a
    // FATAL the server is closing it, and what it has prepared is not worth tracking.
    client.release(failure);
  }
}

/**
 * One round trip on a connection the caller holds: `queries`, then a Sync. Outside a transaction
 * that is an implicit one ({@link executePipelined}); inside one (`pipelinedTransaction`) the
 * statements join it. A connection on which it failed is not fit to reuse.
 */
export async function sendPipeline<Row extends Record<string, unknown> = Record<string, unknown>>(
  client: pg.PoolClient,
  queries: SQL[],
): Promise<Array<{ rows: Row[] }>> {
  const pipeline = new Pipeline(queries.map(compileNamed));
  // Awaited below; this keeps a rejection from going unhandled when `query` throws first.
  pipeline.done.catch(() => undefined);
  client.query(pipeline);
  return (await pipeline.done) as Array<{ rows: Row[] }>;
}

/**
 * The types drizzle's node-postgres driver hands back as text (timestamps, dates, intervals and
 * their arrays); every other type goes through pg's parsers, as there.
 */
const TEXT_TYPES = new Set([1082, 1114, 1184, 1186, 1115, 1182, 1185, 1187, 1231]);
const typesAsDrizzleReadsThem = {
  getTypeParser: (typeId: number, format?: string) =>
    TEXT_TYPES.has(typeId) ? (value: string) => value : pg.types.getTypeParser(typeId, format as 'text'),
};

/**
 * The parts of pg's connection the pipeline writes to (pg types leave them out). These, like
 * `utils.prepareValue` and `Result` below, are pg's internals: pg is pinned to one version and
 * pg-internals.test.ts checks each of them, so an upgrade that changes one fails there first.
 */
interface WireConnection {
  parsedStatements: Record<string, string>;
  stream: { cork(): void; uncork(): void; write(bytes: Buffer): boolean };
  parse(statement: { text: string; name: string; types: unknown[] }): void;
  bind(portal: { portal: string; statement: string; values: unknown[] }): void;
  describe(target: { type: 'P'; name: string }): void;
  execute(portal: { portal: string; rows: number }): void;
  sync(): void;
}

type PgResult = pg.QueryResult & {
  addFields(fields: unknown): void;
  parseRow(fields: unknown): Record<string, unknown>;
  addRow(row: Record<string, unknown>): void;
  addCommandComplete(message: unknown): void;
};

const { prepareValue } = (pg as unknown as { utils: { prepareValue: (value: unknown) => unknown } }).utils;

/**
 * A pg submittable that writes every statement's messages, then one Sync, in one socket write,
 * and collects one result per statement (each ends in CommandComplete). A statement is parsed
 * only on a connection that has not parsed it yet; the connection records it as parsed once
 * the whole pipeline succeeded (after a failure the connection is discarded).
 */
class Pipeline implements pg.Submittable {
  readonly done: Promise<Array<{ rows: Record<string, unknown>[] }>>;
  private resolve!: (results: Array<{ rows: Record<string, unknown>[] }>) => void;
  private reject!: (error: Error) => void;
  private readonly results: PgResult[] = [];
  private current = newResult();
  private parsed: NamedStatement[] = [];
  private connection: WireConnection | null = null;
  private rowError: Error | null = null;

  constructor(private readonly statements: NamedStatement[]) {
    this.done = new Promise((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
    });
  }

  submit(connection: unknown): Error | null {
    const wire = connection as WireConnection;
    this.connection = wire;
    // Every value is converted before anything is written: a value pg cannot send (a BigInt
    // inside an object, say) fails the pipeline with nothing sent (pg reports a returned error).
    let values: unknown[][];
    try {
      values = this.statements.map((statement) => statement.params.map((value) => prepareValue(value)));
    } catch (error) {
      return error as Error;
    }
    const parsing = new Set<string>();
    wire.stream.cork();
    try {
      for (const [i, statement] of this.statements.entries()) {
        if (wire.parsedStatements[statement.name] !== statement.text && !parsing.has(statement.name)) {
          wire.parse({ text: statement.text, name: statement.name, types: [] });
          parsing.add(statement.name);
          this.parsed.push(statement);
        }
        const pieces = bindMessagePieces(statement.name, values[i]!);
        if (pieces) for (const piece of pieces) wire.stream.write(piece);
        else wire.bind({ portal: '', statement: statement.name, values: values[i]! });
        wire.describe({ type: 'P', name: '' });
        wire.execute({ portal: '', rows: 0 });
      }
      wire.sync();
    } finally {
      wire.stream.uncork();
    }
    return null;
  }

  handleRowDescription(message: { fields: unknown }): void {
    this.current.addFields(message.fields);
  }

  handleDataRow(message: { fields: unknown }): void {
    if (this.rowError) return;
    try {
      this.current.addRow(this.current.parseRow(message.fields));
    } catch (error) {
      // Thrown here it would escape from the socket's data handler; reported at the end instead.
      this.rowError = error as Error;
    }
  }

  handleCommandComplete(message: unknown): void {
    this.current.addCommandComplete(message);
    this.results.push(this.current);
    this.current = newResult();
  }

  handleEmptyQuery(): void {
    this.results.push(this.current);
    this.current = newResult();
  }

  handleError(error: Error): void {
    this.reject(error);
  }

  handleReadyForQuery(): void {
    if (this.rowError) {
      this.reject(this.rowError);
      return;
    }
    if (this.results.length !== this.statements.length) {
      this.reject(
        new Error(`pipeline: ${this.results.length} results for ${this.statements.length} statements`),
      );
      return;
    }
    for (const statement of this.parsed) this.connection!.parsedStatements[statement.name] = statement.text;
    this.resolve(this.results);
  }

  // Messages no statement here asks for (no cursors, no COPY); a COPY from the client is refused,
  // as pg's own queries do, so the server moves on to the error and the Sync.
  handlePortalSuspended(): void {}
  handleCopyInResponse(connection: unknown): void {
    (connection as { sendCopyFail(message: string): void }).sendCopyFail(
      'COPY is not supported in a pipeline',
    );
  }
  handleCopyData(): void {}
}

/** pg's Result, which parses rows with the given type parsers (its own typings leave that out). */
const ResultWithTypes = pg.Result as unknown as new (
  rowMode: undefined,
  types: typeof typesAsDrizzleReadsThem,
) => PgResult;

function newResult(): PgResult {
  return new ResultWithTypes(undefined, typesAsDrizzleReadsThem);
}
