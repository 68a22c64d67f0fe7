import { randomUUID } from 'node:crypto';

/** Server-chosen ids: a readable prefix and 128 random bits (`ses_…`, `msg_…`, `cmp_…`). */
export function newId(prefix: 'ses' | 'msg' | 'cmp' | 'key' | 'req'): string {
  return `${prefix}_${randomUUID().replace(/-/g, '')}`;
}
