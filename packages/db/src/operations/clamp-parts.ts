import { sql, type SQL } from 'drizzle-orm';

/** A part the context view shows clamped (core `PartClamp`, as the store keeps it). */
export interface StoredClamp {
  /** The part's message seq and position in the message (`parts.seq`, `parts.idx`). */
  seq: number;
  idx: number;
  field: 'output' | 'error' | 'text' | 'input';
  /** Exact tokens of the part as clamped, and of its output alone. */
  tokens: number;
  outputTokens: number;
  /** The replaced content; null where the clamp left a column as it was. */
  text: string | null;
  toolInput: unknown;
  toolOutput: string | null;
  toolError: string | null;
}

/**
 * Writes a compaction's clamps (core fit.ts) and flags their parts, for the completion's
 * transaction: it runs right after the completion in the same pipeline, and writes only when
 * that completion happened (the row is completed, not yet sized, at the attempt's fence), so a
 * superseded attempt writes nothing. A part clamped again gets the newer clamp, on top of the
 * fields an earlier one replaced (the newer was computed from the part as it showed), and keeps
 * the earlier one whole in `previous`. The clamps go as one array parameter per column, however many.
 */
export function clampPartsSql(input: {
  compactionId: string;
  fence?: number;
  sessionPk: number;
  clamps: readonly StoredClamp[];
  at: Date;
}): SQL {
  const { clamps } = input;
  const column = <T>(pick: (clamp: StoredClamp) => T) => sql.param(clamps.map(pick));
  const fence = input.fence === undefined ? sql`` : sql` and fence = ${input.fence}`;
  return sql`
    with clamp as (
      select * from unnest(${column((c) => c.seq)}::int[], ${column((c) => c.idx)}::int[],
                           ${column((c) => c.field)}::text[], ${column((c) => c.tokens)}::int[],
                           ${column((c) => c.outputTokens)}::int[], ${column((c) => c.text)}::text[],
                           ${column((c) => (c.toolInput === null || c.toolInput === undefined ? null : JSON.stringify(c.toolInput)))}::jsonb[],
                           ${column((c) => c.toolOutput)}::text[], ${column((c) => c.toolError)}::text[])
        as c(seq, idx, field, tokens, output_tokens, text, tool_input, tool_output, tool_error)
    ),
    target as (
      select p.pk, clamp.* from clamp
      join parts p on p.session_pk = ${input.sessionPk} and p.seq = clamp.seq and p.idx = clamp.idx
      where exists (select 1 from compactions
                    where id = ${input.compactionId}${fence}
                      and case when status = 'completed' then tokens_after is null else false end)
    ),
    flagged as (
      update parts set clamped = true where pk in (select pk from target) and not clamped
    )
    insert into part_clamps (part_pk, session_pk, clamped_by, clamped_at, field, tokens, output_tokens,
                             text, tool_input, tool_output, tool_error)
    select t.pk, ${input.sessionPk}, ${input.compactionId}, ${input.at.toISOString()}::timestamptz, t.field,
           t.tokens, t.output_tokens, t.text, t.tool_input, t.tool_output, t.tool_error
    from target t
    on conflict (part_pk) do update set
      -- The replaced clamp, whole: reverting this compaction puts it back (db revertCompaction).
      previous = to_jsonb(part_clamps.*),
      clamped_by = excluded.clamped_by, clamped_at = excluded.clamped_at, field = excluded.field,
      tokens = excluded.tokens, output_tokens = excluded.output_tokens,
      -- A later clamp of another field keeps the earlier one's: its counts were measured on the
      -- part as the view showed it, with that clamp applied.
      text = coalesce(excluded.text, part_clamps.text),
      tool_input = coalesce(excluded.tool_input, part_clamps.tool_input),
      tool_output = coalesce(excluded.tool_output, part_clamps.tool_output),
      tool_error = coalesce(excluded.tool_error, part_clamps.tool_error)`;
}
