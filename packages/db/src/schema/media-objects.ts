import { customType, integer, pgTable, primaryKey, text, timestamp } from 'drizzle-orm/pg-core';

/** `bytea` as bytes in and out (node-postgres returns a Buffer). */
const bytea = customType<{ data: Uint8Array; driverData: Buffer }>({ dataType: () => 'bytea' });

/**
 * The bytes of media parts (images, documents sent as `data:` URLs), stored once per tenant by
 * their SHA-256: a screenshot posted again, in the same session or another of the tenant's, is
 * one row. A file part holds a reference to its row (`compactor-media:sha256:<hex>;bytes=…`,
 * core media/reference.ts) instead of the bytes, so the context view reads no image it does not serve.
 * Tenant-scoped: a tenant can only reach its own rows, whatever hash it knows.
 */
export const mediaObjects = pgTable(
  'media_objects',
  {
    tenantId: text('tenant_id').notNull(),
    /** Lower-case hex SHA-256 of `data`. */
    sha256: text('sha256').notNull(),
    /** The type the bytes are (for an image, the one its header shows). */
    mime: text('mime').notNull(),
    sizeBytes: integer('size_bytes').notNull(),
    /** Pixels, for an image. */
    width: integer('width'),
    height: integer('height'),
    /** Pages, for a document whose count is known. */
    pages: integer('pages'),
    data: bytea('data').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
    /** When the bytes were last stored or posted again: the orphan collector spares younger ones. */
    storedAt: timestamp('stored_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
  },
  (t) => [primaryKey({ name: 'media_objects_pk', columns: [t.tenantId, t.sha256] })],
);
