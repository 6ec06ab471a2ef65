import { describe, expect, it } from 'vitest';
import { type NodeOption, changedOptions, defaultValue, domainBounds, inputKind, parseValue } from '../../web/src/options.ts';
import { type User, levelOf, membershipChanges, permissionsOf } from '../../web/src/pages/admin-logic.ts';
import { ASSETS } from '../../src/protocol/files.ts';
import { ASSET_LABELS, assetLabel } from '../../web/src/format.ts';

const option = (type: string, value: string, domain: unknown = ''): NodeOption => ({ name: 'x', type, value, domain, help: '' });

describe('processing option values', () => {
  it('picks the input from the option type, and from the value when no node offers the option', () => {
    expect(inputKind(option('bool', 'false'))).toBe('bool');
    expect(inputKind(option('string', '', ['a', 'b']))).toBe('enum');
    expect(inputKind(option('float', '1'))).toBe('float');
    expect(inputKind(undefined, true)).toBe('bool');
    expect(inputKind(undefined, 2)).toBe('int');
    expect(inputKind(undefined, 0.4)).toBe('float');
    expect(inputKind(undefined, 'high')).toBe('string');
  });

  it('reads the bounds the domain text states', () => {
    expect(domainBounds('integer >= 1')).toEqual({ min: 1 });
    expect(domainBounds('integer: 1 <= x <= 14')).toEqual({ min: 1, max: 14 });
    expect(domainBounds('float >= 0.1')).toEqual({ min: 0.1 });
    // ODM's "positive" options default to 0.
    expect(domainBounds('positive float')).toEqual({ min: 0 });
    expect(domainBounds('string')).toEqual({});
    expect(domainBounds(['a', 'b'])).toEqual({});
  });

  it('types the string defaults nodes give', () => {
    expect(defaultValue(option('bool', 'true'))).toBe(true);
    expect(defaultValue(option('int', '2'))).toBe(2);
    expect(defaultValue(option('float', '1.25'))).toBe(1.25);
    expect(defaultValue(option('enum', 'high', ['high', 'low']))).toBe('high');
  });

  it('turns what was typed into a value, or says why it is not one', () => {
    expect(parseValue('int', '24', 'smrf-window')).toEqual({ value: 24 });
    expect(parseValue('float', '0.4', 'smrf-threshold')).toEqual({ value: 0.4 });
    expect(parseValue('int', '2.5', 'split')).toEqual({ error: 'split needs a whole number.' });
    expect(parseValue('float', '', 'crop')).toEqual({ error: 'crop needs a number.' });
    expect(parseValue('bool', true, 'dsm')).toEqual({ value: true });
    expect(parseValue('string', ' a b ', 'sm-cluster')).toEqual({ value: ' a b ' });
  });
});

describe('changed options', () => {
  it('keeps only the values that differ from the defaults, in the nodes\' order', () => {
    const available = [option('bool', 'false'), { ...option('int', '5'), name: 'y' }, { ...option('enum', 'high', ['high', 'low']), name: 'z' }];
    const values = new Map<string, boolean | number | string>([['z', 'low'], ['x', false], ['y', 7]]);
    expect(changedOptions(available, values)).toEqual([{ name: 'y', value: 7 }, { name: 'z', value: 'low' }]);
  });
});

describe('sharing levels', () => {
  it('names the three levels whatever the order of the permissions', () => {
    expect(levelOf(['view'])).toBe('view');
    expect(levelOf(['change', 'view', 'add'])).toBe('edit');
    expect(levelOf(['add', 'change', 'delete', 'view'])).toBe('full');
    expect(levelOf(['view', 'delete'])).toBeNull();
    expect(permissionsOf('edit')).toEqual(['view', 'add', 'change']);
  });
});

describe('group membership', () => {
  const user = (id: number, groups: number[]) => ({ id, groups }) as User;
  it('changes only the users whose membership differs', () => {
    const users = [user(1, [5]), user(2, [5, 6]), user(3, [6]), user(4, [])];
    expect(membershipChanges(users, 5, new Set([1, 3]))).toEqual([
      { id: 2, groups: [6] },
      { id: 3, groups: [6, 5] },
    ]);
  });
});

describe('downloads list', () => {
  it('names every asset a task may offer in words, not by its file name', () => {
    const unnamed = Object.keys(ASSETS).filter((asset) => !(asset in ASSET_LABELS));
    expect(unnamed).toEqual([]);
    expect(assetLabel('orthophoto.kmz')).toBe('Orthophoto (KMZ, Google Earth)');
  });
});
