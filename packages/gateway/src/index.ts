// Public surface of @compactor/gateway: the drop-in endpoints' pipeline, for the API's routes to call.
export * from './conversation';
