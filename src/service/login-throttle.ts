// Failed logins slowed down: each attempt costs a PBKDF2 verification (600,000 iterations by default) on the
// shared thread pool, so unlimited guessing is both a brute-force attack and a denial of service. Counted per
// address and name, and per address; a success clears its pair. Each instance counts its own.
const WINDOW_MS = 15 * 60_000;
const PER_NAME = 10;
const PER_ADDRESS = 50;
const MAX_KEYS = 100_000;

interface Count {
  failures: number;
  sinceMs: number;
}

export class LoginThrottle {
  private readonly counts = new Map<string, Count>();

  constructor(private readonly now: () => number = Date.now) {}

  /** Seconds until this address may try this name again; 0 when it may now. */
  waitSeconds(address: string, username: string): number {
    const waits = [this.wait(`${address}|${username.toLowerCase()}`, PER_NAME), this.wait(address, PER_ADDRESS)];
    return Math.max(...waits);
  }

  failed(address: string, username: string): void {
    this.count(`${address}|${username.toLowerCase()}`);
    this.count(address);
  }

  succeeded(address: string, username: string): void {
    this.counts.delete(`${address}|${username.toLowerCase()}`);
  }

  private wait(key: string, limit: number): number {
    const count = this.counts.get(key);
    if (!count) return 0;
    const left = count.sinceMs + WINDOW_MS - this.now();
    if (left <= 0) {
      this.counts.delete(key);
      return 0;
    }
    return count.failures >= limit ? Math.ceil(left / 1000) : 0;
  }

  private count(key: string): void {
    const count = this.counts.get(key);
    if (count && count.sinceMs + WINDOW_MS > this.now()) {
      count.failures++;
      return;
    }
    if (this.counts.size >= MAX_KEYS) this.counts.delete(this.counts.keys().next().value as string);
    this.counts.set(key, { failures: 1, sinceMs: this.now() });
  }
}
