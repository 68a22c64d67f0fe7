/**
 * The ArrayBuffers of `views` that a `postMessage` can move instead of copying: those a view
 * covers whole. Node carves small Buffers out of a shared pool, which must never move (it would
 * leave every other Buffer in it empty); those few bytes are copied.
 */
export function movableBuffers(views: Uint8Array[]): ArrayBuffer[] {
  return views
    .filter((view) => view.byteOffset === 0 && view.byteLength === view.buffer.byteLength)
    .map((view) => view.buffer as ArrayBuffer);
}
