import type { z } from 'zod';
import type {
  AppendResponse,
  CompactionDetailOut,
  CompactionPage,
  ContextOut,
  HistoryPage,
  OverflowOut,
  PatchResponse,
} from '@compactor/contract';

// The answers session operations give, in the contract's shapes (the API sends them as they are).

export type AppendAnswer = z.output<typeof AppendResponse>;
export type FinishMessageAnswer = z.output<typeof PatchResponse>;
export type HistoryPageAnswer = z.output<typeof HistoryPage>;
export type ContextAnswer = z.output<typeof ContextOut>;
export type CompactionPageAnswer = z.output<typeof CompactionPage>;
export type CompactionDetailAnswer = z.output<typeof CompactionDetailOut>;
export type OverflowAnswer = z.output<typeof OverflowOut>;
