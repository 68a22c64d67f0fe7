/**
 * The plans in docs/plans/media-100k.txt: the statements that read media references, on a
 * scratch database of production size (`npx tsx bench/scale/plans-media.ts`):
 *  - tenant `scale`: a 100k-message session compacted to the newest 200 and a never-compacted
 *    one (bench/scale/seed.ts), every 50th message a user message with a screenshot (a file part
 *    holding a media reference, 2,000 a session), their objects, 4,000 objects no part refers
 *    to, and 200 objects whose bytes only the other tenant's parts name;
 *  - tenant `other`: 200 sessions of 1,000 messages, 20 screenshots each, each image shared by
 *    20 of its sessions (4,000 references of 200 objects).
 * Then recall by words right after a prune, before its job flags the marks (db `searchRecall`).
 * Each path's statements are recorded (run in a transaction that is rolled back), then replayed
 * under EXPLAIN (ANALYZE, BUFFERS), rolled back. PLANS_SEED=0 reuses the database,
 * PLANS_KEEP=1 keeps it, PLANS_OUT names the output (default: the docs file above).
 */
import { sql } from 'drizzle-orm';
import {
  contextTokenStats,
  countOrphanMedia,
  createDatabase,
  deleteOrphanMedia,
  findRecallMedia,
  RECALL_UNFLAGGED_MARKS,
  searchRecall,
  type Db,
} from '@compactor/db';
import { dropDatabase, freshDatabase } from '../processes';
import { loadNow as load, pathRecorder } from './recorded-paths';
import { createOutputCorpus, seedSessions, settle } from './seed';

const URL = process.env.PLANS_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/compactor_bench_media_h3';
const OUT = process.env.PLANS_OUT ?? 'docs/plans/media-100k.txt';

if (process.env.PLANS_SEED !== '0') {
  await freshDatabase(URL);
  const seeding = createDatabase(URL, { statementTimeoutMs: 0 });
  const started = performance.now();
  await createOutputCorpus(seeding.pool);
  const base = { tenantId: 'scale', sessions: 1, messages: 100_000, outputChars: 2_048 };
  await seedSessions(seeding.pool, { ...base, idPrefix: 'compacted-100k-', keep: 200 });
  await seedSessions(seeding.pool, { ...base, idPrefix: 'raw-100k-', keep: null });
  const other = { tenantId: 'other', idPrefix: 'other-', sessions: 200, messages: 1_000 };
  await seedSessions(seeding.pool, { ...other, outputChars: 2_048, keep: 200 });
  // A screenshot on every 50th message (a user message: odd seqs), after its text part.
  await seeding.pool.query(`
    insert into parts (message_pk, session_pk, seq, idx, type, mime, filename, url, tokens)
    select m.pk, m.session_pk, m.seq, 1, 'file', 'image/png', 'shot' || m.seq || '.png',
           'compactor-media:sha256:' || encode(sha256(convert_to(
             case when s.tenant_id = 'scale' then s.pk || ':' || m.seq
                  else 'other:' || (s.pk % 10) || ':' || m.seq end, 'UTF8')), 'hex')
             || ';bytes=512;px=2560x1440', 1105
    from messages m join sessions s on s.pk = m.session_pk
    where m.seq % 50 = 1 and not m.summary`);
  const object = (tenant: string, hash: string, n: string) =>
    `select ${tenant}, ${hash}, 'image/png', 512, 2560, 1440,
            decode(repeat(md5(${n}), 16), 'hex'), now() - interval '1 day'`;
  await seeding.pool.query(`
    insert into media_objects (tenant_id, sha256, mime, size_bytes, width, height, data, stored_at)
    select distinct on (tenant_id, sha256) * from (
      ${object('s.tenant_id', 'substr(p.url, 24, 64)', 'p.url')}
      from parts p join sessions s on s.pk = p.session_pk where p.type = 'file'
      union all
      ${object(`'scale'`, `encode(sha256(convert_to('orphan:' || g, 'UTF8')), 'hex')`, 'g::text')}
      from generate_series(1, 4000) g
      union all
      ${object(`'scale'`, 'substr(p.url, 24, 64)', 'p.url')}
      from parts p join sessions s on s.pk = p.session_pk where p.type = 'file' and s.tenant_id = 'other'
    ) o (tenant_id, sha256, mime, size_bytes, width, height, data, stored_at)`);
  await settle(seeding.pool);
  await seeding.pool.query('vacuum (analyze) media_objects');
  console.log(`seeded in ${((performance.now() - started) / 1000).toFixed(0)} s (load ${load()})`);
  await seeding.close();
}

const { db, pool, close } = createDatabase(URL, { statementTimeoutMs: 0 });
const { record, write } = pathRecorder(db, pool);

const pkOf = async (id: string) =>
  Number((await pool.query<{ pk: string }>('select pk from sessions where id = $1', [id])).rows[0]!.pk);
const compacted = await pkOf('compacted-100k-1');
const raw = await pkOf('raw-100k-1');
/** The marker id (16 hex digits) of the screenshot at `seq` of session `pk`. */
const markerId = async (pk: number, seq: number) =>
  (
    await pool.query<{ id: string }>(
      `select substr(url, 24, 16) as id from parts where session_pk = $1 and seq = $2 and type = 'file'`,
      [pk, seq],
    )
  ).rows[0]!.id;

const middle = await markerId(raw, 50_001);
const first = await markerId(compacted, 1);
const foreign = (
  await pool.query<{ id: string }>(
    `select substr(p.url, 24, 16) as id from parts p join sessions s on s.pk = p.session_pk
     where s.tenant_id = 'other' and p.type = 'file' limit 1`,
  )
).rows[0]!.id;
await record(
  `findRecallMedia, never-compacted 100k session (pk ${raw}), the screenshot at seq 50,001`,
  (tx) => findRecallMedia(tx, 'scale', raw, middle),
);
// The statement as it was before the index range (a pattern on the url within the session), for comparison.
await record(`before: findRecallMedia's earlier statement, the same lookup`, (tx) =>
  tx.execute(sql`
    select o.sha256, m.id as message_id, p.seq, p.text as call_id, p.mime, p.filename, p.tokens,
           o.data, o.width, o.height
    from parts p
    join messages m on m.pk = p.message_pk
    join media_objects o on o.tenant_id = ${'scale'} and o.sha256 = substr(p.url, ${24}, 64)
    where p.session_pk = ${raw} and p.type = 'file' and p.url like ${`compactor-media:sha256:${middle}%`}
    order by p.seq desc, p.idx desc
    limit 1`),
);
await record(
  `findRecallMedia, compacted 100k session (pk ${compacted}), the screenshot at seq 1 (behind the boundary)`,
  (tx) => findRecallMedia(tx, 'scale', compacted, first),
);
await record(
  `findRecallMedia, an id no part of the session names (the other tenant's bytes: 20 references)`,
  (tx) => findRecallMedia(tx, 'scale', raw, foreign),
);
await record(
  `contextTokenStats (the status's stats, its images step), compacted 100k session (pk ${compacted})`,
  (tx) => contextTokenStats(tx, compacted),
);
await record(
  `contextTokenStats (the status's stats, its images step), never-compacted 100k session (pk ${raw})`,
  (tx) => contextTokenStats(tx, raw),
);
const scope = { tenantId: 'scale', storedBefore: new Date() };
await record('countOrphanMedia, tenant scale (8,200 objects, 4,200 orphaned)', (tx) =>
  countOrphanMedia(tx, scope),
);
await record(
  'deleteOrphanMedia, tenant scale: its first two batches of 200 and its last',
  (tx) => deleteOrphanMedia(tx, scope),
  (i, n) => i < 2 || i === n - 1,
);

// Recall by words right after a prune. The seed marks the compacted session's outputs up to seq
// 99,850 and flags nothing; the newest 2,000 seqs are flagged here (and analyzed) as the jobs
// that ran would have left them, then a setup unflags the marks from seq 99,001 (425 outputs):
// a prune's marks served before its job flags them.
await pool.query(
  `update parts set recallable = true where session_pk = $1 and seq > 98000 and type in ('text', 'reasoning', 'tool') and not recallable`,
  [compacted],
);
await pool.query('vacuum (analyze) parts');
const search = (tx: Db, query: string) =>
  searchRecall(tx, compacted, { query, limit: 10, excerptChars: 300, pinSystemMessages: true });
await record(
  `searchRecall, compacted 100k session (pk ${compacted}), right after a prune of 425 outputs: its marks not flagged yet (the walk reads at most ${RECALL_UNFLAGGED_MARKS})`,
  (tx) => search(tx, '99844'),
  undefined,
  [
    `update parts set recallable = false where session_pk = ${compacted} and seq between 99001 and 99850 and type = 'tool'`,
  ],
);
await record(`searchRecall, the same session once the prune job flagged its marks`, (tx) =>
  search(tx, '99844'),
);

await write(OUT, [
  `-- Media references at 100k: EXPLAIN (ANALYZE, BUFFERS), ${new Date().toISOString().slice(0, 10)}, by \`npx tsx bench/scale/plans-media.ts\``,
  '-- (bench/scale/plans-media.ts says what the database holds). Each statement runs in a transaction, rolled back.',
]);
await close();
if (process.env.PLANS_KEEP !== '1') await dropDatabase(URL);
