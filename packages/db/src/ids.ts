import { randomUUID } from 'node:crypto';

/** Server-chosen ids: a readable prefix and 128 random bits (`ses_…`, `msg_…`, `cmp_…`, `prn_…` for prune jobs). */
export function newId(prefix: 'ses' | 'msg' | 'cmp' | 'key' | 'req' | 'prn' | 'prp'): string {
  return `${prefix}_${randomUUID().replace(/-/g, '')}`;
}
