import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Integration tests each start a private containerd; on 2 cores run files one at a time.
    fileParallelism: false,
    reporters: ['default', './test/summary-reporter.ts'],
  },
});
