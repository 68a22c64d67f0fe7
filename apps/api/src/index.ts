// For in-process use (the demo, tests of other packages): the server and its parts.
export { buildServer, type ServerOptions } from './server';
export { createAuthenticator, hashApiKey, OPEN_TENANT, type Authenticator } from './http/auth';
export type { ApiResources, RedisPing } from './resources';
export { buildDescribingServer, openApiDocument } from './openapi';
export { UNDOCUMENTED_ROUTES } from './http/openapi-options';
