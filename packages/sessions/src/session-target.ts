/** A session as its clients name it: their tenant and the session's client id. */
export interface SessionTarget {
  tenantId: string;
  id: string;
}
