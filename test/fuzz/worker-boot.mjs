// Starts a TypeScript module in a worker thread (tsx's loader, registered here: a worker does
// not take the parent's --import hooks for its entry). workerData.entry: the module's URL.
import { workerData } from 'node:worker_threads';
import { register } from 'tsx/esm/api';

register();
await import(workerData.entry);
