import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
    // Two files at a time: many wait on engines, browsers and polls, and one at a time would leave a core idle
    // once the engine's suite, run beside this one, is done.
    maxWorkers: 2,
    minWorkers: 1,
  },
});
