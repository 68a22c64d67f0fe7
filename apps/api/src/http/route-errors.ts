import { ErrorBody } from '@compactor/contract';

/** The error responses every authenticated route can give, for the OpenAPI document. */
export const commonErrors = {
  400: ErrorBody,
  401: ErrorBody,
  404: ErrorBody,
  409: ErrorBody,
  413: ErrorBody,
};
