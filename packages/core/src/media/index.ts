// Media in file parts: header dimensions, the providers' token counts, checks before storing.
export * from './bytes';
export * from './dimensions';
export * from './media-tokens';
export * from './inspect';
export * from './reference';
export * from './budget';
