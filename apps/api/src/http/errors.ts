// Handlers and the session layer throw the same class: the error handler answers it whoever decided.
export type { ErrorCode } from '@compactor/contract';
export { ApiError, invalid, notFound } from '@compactor/sessions';
