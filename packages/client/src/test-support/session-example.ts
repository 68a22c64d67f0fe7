import { SessionOut } from '@compactor/contract';
import { z } from 'zod';

/** The contract's own example session: a valid `Session` answer for fake servers. */
export const sessionExample = (z.globalRegistry.get(SessionOut)?.examples as unknown[])[0];
