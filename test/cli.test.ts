import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const bin = fileURLToPath(new URL('../bin/aeromap', import.meta.url));

describe('aeromap command line', () => {
  it('prints its usage', () => {
    const out = execFileSync(bin, ['--help'], { encoding: 'utf8' });
    expect(out).toContain('Usage: aeromap');
  });
});
