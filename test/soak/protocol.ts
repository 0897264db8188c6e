/** The IPC messages between the soak (soak.ts) and each of its daemons (daemon.ts). */

/** One reading of a daemon, taken after a full GC; lag over the window since the previous one. */
export interface Sample {
  at: number;
  rssMb: number;
  heapMb: number;
  lagP50Ms: number;
  lagP99Ms: number;
  lagMaxMs: number;
}

export interface KeyBooks {
  keyId: string;
  spentMicros: number;
  budgetMicros: number | null;
  /** What the key still holds (in flight: nothing at the end). */
  heldMicros: number;
  /** What the account still holds, as read with this key. */
  accountHeldMicros: number;
}

/** An account as the store holds it at the end of a run. */
export interface Books {
  accountId: string;
  balanceMicros: number;
  ledgerSumMicros: number;
  entries: { kind: string; amountMicros: number; balanceAfterMicros: number; requestId: string | null; apiKeyId: string | null; reference: string | null }[];
  usage: { requestId: string; apiKeyId: string | null; costMicros: number; status: number; cache: string | null }[];
  keys: KeyBooks[];
}

export type DaemonMessage =
  | { type: 'sample'; id: number }
  | { type: 'admin'; id: number }
  | { type: 'books'; id: number; accounts: { accountId: string; keyIds: string[] }[] }
  | { type: 'final'; id: number }
  | { type: 'stop'; id: number };

export type DaemonReply =
  | { type: 'ready'; url: string; pid: number }
  | { type: 'crash'; stack: string }
  | { type: 'failed'; id: number; message: string }
  | { type: 'sample'; id: number; sample: Sample }
  | { type: 'admin'; id: number; key: string }
  | { type: 'books'; id: number; books: Books[] }
  | { type: 'final'; id: number; lagP50Ms: number; lagP99Ms: number; lagMaxMs: number; errors: string[]; warnings: Record<string, number> }
  | { type: 'stopped'; id: number };
