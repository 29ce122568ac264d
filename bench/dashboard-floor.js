// The dashboard's floor: the same feed (the /events stream, /pods and /node
// polling, the store with its batching and clock) in a process that draws
// nothing. bench/dashboard.js runs it side by side with `klet dashboard`;
// the difference is what the screen costs.
// Usage: node bench/dashboard-floor.js SOCKET
import { DashboardStore } from '../dist/lib/dashboard/store.js';
import { remoteSource, runFeed } from '../dist/lib/dashboard/feed.js';

const socket = process.argv[2];
const store = new DashboardStore();
const ac = new AbortController();
process.on('SIGTERM', () => ac.abort());
store.subscribe(() => store.getSnapshot());
store.startClock(ac.signal);
await runFeed(store, remoteSource(socket), ac.signal);
