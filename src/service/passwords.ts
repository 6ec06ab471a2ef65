// Password hashes in Django's format, pbkdf2_sha256$<iterations>$<salt>$<base64 sha256 key>, so that user
// tables move between WebODM and Aeromap. Verification reads the iteration count from the stored hash, so
// raising PASSWORD_ITERATIONS later leaves existing hashes valid.
import { pbkdf2, randomInt, timingSafeEqual } from 'node:crypto';
import { promisify } from 'node:util';

const derive = promisify(pbkdf2);
const ALGORITHM = 'pbkdf2_sha256';
const KEY_LENGTH = 32;
const SALT_ALPHABET = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';
const SALT_LENGTH = 22;
// Upper bound for hashes read from the database, so that a tampered row cannot stall a login for minutes.
const MAX_ITERATIONS = 100_000_000;

function randomSalt(): string {
  return Array.from({ length: SALT_LENGTH }, () => SALT_ALPHABET[randomInt(SALT_ALPHABET.length)]).join('');
}

async function pbkdf2Sha256(password: string, salt: string, iterations: number): Promise<Buffer> {
  return derive(password, salt, iterations, KEY_LENGTH, 'sha256');
}

export async function hashPassword(password: string, iterations: number): Promise<string> {
  const salt = randomSalt();
  const key = await pbkdf2Sha256(password, salt, iterations);
  return `${ALGORITHM}$${iterations}$${salt}$${key.toString('base64')}`;
}

export function isPasswordHash(text: string): boolean {
  return /^pbkdf2_sha256\$\d+\$[^$]+\$[A-Za-z0-9+/=]+$/.test(text);
}

export async function verifyPassword(password: string, encoded: string): Promise<boolean> {
  if (!isPasswordHash(encoded)) return false;
  const [, iterationsText, salt, hash] = encoded.split('$');
  const iterations = Number(iterationsText);
  if (!Number.isSafeInteger(iterations) || iterations < 1 || iterations > MAX_ITERATIONS) return false;
  const expected = Buffer.from(hash, 'base64');
  const actual = await pbkdf2Sha256(password, salt, iterations);
  return expected.length === actual.length && timingSafeEqual(expected, actual);
}

/** Spends the time of one verification, so that an unknown username answers as slowly as a wrong password. */
export async function spendVerificationTime(iterations: number): Promise<void> {
  await pbkdf2Sha256('', 'aeromap-no-such-user', iterations);
}
