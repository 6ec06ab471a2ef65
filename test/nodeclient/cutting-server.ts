// A server of all.zip that behaves as ClusterODM does: every ranged answer says Connection: close and stops
// half-way through, the socket closed with bytes still in flight. The client must resume from what it got.
import { createHash, randomBytes } from 'node:crypto';
import { type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

/** Writes half the piece as fast as the client takes it, then closes the socket with bytes still in flight. */
function sendThenCut(response: ServerResponse, piece: Buffer): void {
  const half = Math.ceil(piece.length / 2);
  if (piece.length < 2 ** 16) return void response.end(piece);
  let sent = 0;
  const more = (): void => {
    while (sent < half) {
      const next = piece.subarray(sent, Math.min(half, sent + 2 ** 16));
      sent += next.length;
      if (!response.write(next)) return void response.once('drain', more);
    }
    response.socket?.destroy();
  };
  more();
}

export async function startCuttingServer(size: number) {
  const file = randomBytes(size);
  const ranges: string[] = [];
  const server = createServer((request, response) => {
    const match = /^bytes=(\d+)-(\d+)$/.exec(request.headers.range ?? '');
    const start = Number(match?.[1] ?? 0);
    const end = Math.min(file.length - 1, Number(match?.[2] ?? file.length - 1));
    ranges.push(request.headers.range ?? '');
    response.writeHead(206, {
      connection: 'close',
      'content-type': 'application/zip',
      'content-range': `bytes ${start}-${end}/${file.length}`,
      'content-length': end - start + 1,
    });
    sendThenCut(response, file.subarray(start, end + 1));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    sha256: createHash('sha256').update(file).digest('hex'),
    ranges,
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}
