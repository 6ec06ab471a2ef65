// The engine options as command-line flags, on options shaped as the engine's: the real engine's list reaches them in
// test/process.test.ts, which runs `aeromap process` itself.
import { describe, expect, it } from 'vitest';
import { FlagError, flagsHelp, parseArgs } from '../../src/process/flags.ts';
import type { EngineOption } from '../../src/protocol/options.ts';

const SPECS: EngineOption[] = [
  { name: 'dsm', type: 'bool', value: 'false', domain: '', help: 'Make a DSM.' },
  { name: 'pc-quality', type: 'enum', value: 'medium', domain: ['ultra', 'high', 'medium', 'low', 'lowest'], help: 'Point cloud quality.' },
  { name: 'orthophoto-resolution', type: 'float', value: '5', domain: 'float >= 0.1', help: 'Orthophoto resolution in cm/pixel.' },
];
const OWN = { node: true, 'dry-run': false };

const refusal = (args: string[]): string => {
  try {
    parseArgs(args, SPECS, OWN);
  } catch (err) {
    expect(err).toBeInstanceOf(FlagError);
    return (err as Error).message;
  }
  throw new Error(`${args.join(' ')} was taken`);
};

describe('command-line flags', () => {
  it('takes bool flags alone or with =, values after the flag or after =, and the positionals', () => {
    const parsed = parseArgs(['photos', '--dsm', '--pc-quality', 'high', '--orthophoto-resolution=2.5', '--node', 'http://n:3000', '--dry-run'], SPECS, OWN);
    expect(parsed.positionals).toEqual(['photos']);
    expect(parsed.own).toEqual({ node: 'http://n:3000', 'dry-run': true });
    expect(parsed.options).toEqual([
      { name: 'dsm', value: true },
      { name: 'pc-quality', value: 'high' },
      { name: 'orthophoto-resolution', value: 2.5 },
    ]);
    expect(parseArgs(['--dsm=false'], SPECS, OWN).options).toEqual([{ name: 'dsm', value: false }]);
  });

  it('answers a mistyped flag with the closest name, and none when nothing is close', () => {
    expect(refusal(['--dsmm'])).toBe('unknown option --dsmm; did you mean --dsm? (--help lists them)');
    expect(refusal(['--pc-qualty', 'high'])).toContain('did you mean --pc-quality?');
    expect(refusal(['--dryrun'])).toContain('did you mean --dry-run?');
    expect(refusal(['--completely-unrelated'])).toBe('unknown option --completely-unrelated (--help lists them)');
  });

  it('names the values a flag takes when its value is wrong or missing', () => {
    expect(refusal(['--pc-quality', 'hihg'])).toBe('--pc-quality: Invalid value hihg (not in enum); expected one of ultra, high, medium, low, lowest');
    expect(refusal(['--orthophoto-resolution'])).toBe('--orthophoto-resolution needs a value (float >= 0.1)');
  });

  it('lists every flag with its values and default in the help', () => {
    const help = flagsHelp(SPECS);
    expect(help).toContain('  --dsm\n      Make a DSM. (default: false)');
    expect(help).toContain('  --pc-quality <ultra|high|medium|low|lowest>\n      Point cloud quality. (default: medium)');
    expect(help).toMatch(/--orthophoto-resolution <float>\n\s+.+\(default: 5\)/);
  });
});
