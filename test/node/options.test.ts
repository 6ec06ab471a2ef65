import { describe, expect, it } from 'vitest';
import { validateOptions, withPostProcessing, type EngineOption } from '../../src/protocol/options.ts';

const option = (name: string, type: EngineOption['type'], domain: EngineOption['domain']): EngineOption => ({
  name,
  type,
  value: '',
  domain,
  help: '',
});

const SPECS: EngineOption[] = [
  option('end-with', 'enum', ['dataset', 'opensfm']),
  option('mesh-size', 'int', 'positive integer'),
  option('depth', 'int', 'integer: 1 <= x <= 14'),
  option('resolution', 'float', 'float > 0.0'),
  option('offset', 'float', 'float'),
  option('overlap', 'float', 'percent'),
  option('dsm', 'bool', ''),
  option('boundary', 'string', 'json'),
  option('name', 'string', 'string'),
  option('odd', 'int', 'prime number'),
  option('cog', 'bool', ''),
];

function errorsOf(input: unknown): { name: string; error: string }[] {
  const result = validateOptions(SPECS, input);
  if (result.ok) throw new Error('expected errors');
  return JSON.parse(result.error);
}

describe('option validation', () => {
  it('converts values to their types, keeps the engine order and drops unknown names', () => {
    const result = validateOptions(
      SPECS,
      JSON.stringify([
        { name: 'dsm', value: 'true' },
        { name: 'unknown', value: 1 },
        { name: 'mesh-size', value: '12345' },
        { name: 'resolution', value: 2.5 },
        { name: 'end-with', value: 'opensfm' },
        { name: 'offset', value: '-3' },
        { name: 'boundary', value: '{"type": "Polygon"}' },
      ]),
    );
    expect(result).toEqual({
      ok: true,
      options: [
        { name: 'end-with', value: 'opensfm' },
        { name: 'mesh-size', value: 12345 },
        { name: 'resolution', value: 2.5 },
        { name: 'offset', value: -3 },
        { name: 'dsm', value: true },
        { name: 'boundary', value: '{"type": "Polygon"}' },
      ],
      ignored: ['unknown'],
    });
  });

  it('accepts an array as well as a JSON string, and treats anything else as no options', () => {
    expect(validateOptions(SPECS, [{ name: 'dsm', value: '0' }])).toEqual({
      ok: true,
      options: [{ name: 'dsm', value: false }],
      ignored: [],
    });
    expect(validateOptions(SPECS, undefined)).toEqual({ ok: true, options: [], ignored: [] });
    expect(validateOptions(SPECS, '{"a": 1}')).toEqual({ ok: true, options: [], ignored: [] });
    expect(validateOptions(SPECS, 'not json')).toMatchObject({ ok: false });
  });

  it('checks every domain NodeODM knows and lists each violation', () => {
    const errors = errorsOf([
      { name: 'end-with', value: 'odm_dem' },
      { name: 'mesh-size', value: -1 },
      { name: 'depth', value: 15 },
      { name: 'resolution', value: 0 },
      { name: 'overlap', value: 101 },
      { name: 'dsm', value: 'maybe' },
      { name: 'boundary', value: '{broken' },
      { name: 'odd', value: 3 },
    ]);
    expect(errors.map((e) => e.name)).toEqual([
      'end-with',
      'mesh-size',
      'depth',
      'resolution',
      'overlap',
      'dsm',
      'boundary',
      'odd',
    ]);
    expect(errors[0].error).toBe('Invalid value odm_dem (not in enum)');
    expect(errors[1].error).toBe('Invalid value -1 (out of range)');
    expect(errors[5].error).toBe('Cannot convert maybe to boolean');
    expect(errors[7].error).toContain('Domain value cannot be handled');
  });

  it('refuses numbers that are not numbers, and fractions for integers', () => {
    expect(errorsOf([{ name: 'mesh-size', value: '3.5' }])[0].error).toContain('not an integer');
    expect(errorsOf([{ name: 'mesh-size', value: '12abc' }])[0].error).toContain('not an integer');
    expect(errorsOf([{ name: 'offset', value: '' }])[0].error).toContain('not a number');
    expect(errorsOf([{ name: 'offset', value: true }])[0].error).toContain('not a number');
  });

  it('turns on the engine post-processing options unless told to skip them', () => {
    const given = [{ name: 'dsm', value: true }];
    expect(withPostProcessing(SPECS, given, false)).toEqual([...given, { name: 'cog', value: true }]);
    expect(withPostProcessing(SPECS, given, true)).toEqual(given);
    const explicit = [{ name: 'cog', value: false }];
    expect(withPostProcessing(SPECS, explicit, false)).toEqual(explicit);
  });
});
