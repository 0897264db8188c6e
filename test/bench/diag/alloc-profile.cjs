'use strict';
// Preloaded into a daemon (or the floor) with `--require`: samples every allocation, the ones
// the GC collects included, from ALLOC_START_MS after start (4000) until the process exits, and
// counts the HTTP requests its servers took meanwhile. At exit it writes
// ALLOC_DIR/alloc-<pid>.heapprofile (Chrome DevTools format; test/bench/diag/profile-report.ts
// summarizes it) and alloc-<pid>.json with the bytes allocated per request.
//
//   GW_NODE_ARGS="--require ./test/bench/diag/alloc-profile.cjs" node --import tsx test/bench/probe.ts
//
// Node's own --heap-prof keeps only the samples still alive at the end, which says nothing of
// what a request allocates and drops; this asks the inspector for the collected ones too.
const inspector = require('node:inspector');
const fs = require('node:fs');
const http = require('node:http');
const path = require('node:path');

const dir = process.env.ALLOC_DIR || '/tmp';
const session = new inspector.Session();
session.connect();
let sampling = false;
let requests = 0;
const emit = http.Server.prototype.emit;
http.Server.prototype.emit = function (event, ...args) {
  if (event === 'request' && sampling) requests += 1;
  return emit.call(this, event, ...args);
};
setTimeout(() => {
  const params = { samplingInterval: Number(process.env.ALLOC_INTERVAL || 1024), includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true };
  session.post('HeapProfiler.startSampling', params, (error) => {
    if (error) process.stderr.write(`alloc-profile: ${error.message}\n`);
    else sampling = true;
  });
}, Number(process.env.ALLOC_START_MS || 4000)).unref();
process.on('exit', () => {
  if (!sampling) return;
  // An in-process inspector session answers synchronously, so this runs before the exit.
  session.post('HeapProfiler.stopSampling', (error, result) => {
    if (error) return;
    let bytes = 0;
    const walk = (node) => {
      bytes += node.selfSize;
      for (const child of node.children) walk(child);
    };
    walk(result.profile.head);
    fs.writeFileSync(path.join(dir, `alloc-${process.pid}.heapprofile`), JSON.stringify(result.profile));
    fs.writeFileSync(path.join(dir, `alloc-${process.pid}.json`), `${JSON.stringify({ requests, bytes, bytesPerRequest: requests > 0 ? Math.round(bytes / requests) : null })}\n`);
  });
});
