/**
 * The gateway's side of the ingestion benchmark, in a process of its own (as the gateway is).
 * It receives `{ url, key, entries }` over IPC and encodes every XADD as RESP before the clock
 * starts: serializing the commands is the gateway's CPU, spent on the gateway's machines in
 * production, not on the control plane's. It answers 'ready'; on 'start' it writes the commands
 * on one socket in pipelines of 10,000 (each after Redis has answered the previous one) and, once
 * every command is answered, sends `{ cpuMs }`: the CPU it used while writing.
 */
import { connect } from 'node:net';

const PIPELINE = 10_000;
const bulk = (text: string) => `$${Buffer.byteLength(text)}\r\n${text}\r\n`;

process.once('message', ({ url, key, entries }: { url: string; key: string; entries: string[] }) => {
  const head = `*5\r\n$4\r\nXADD\r\n${bulk(key)}$1\r\n*\r\n$4\r\ndata\r\n`;
  const pipelines: { bytes: Buffer; count: number }[] = [];
  for (let i = 0; i < entries.length; i += PIPELINE) {
    const slice = entries.slice(i, i + PIPELINE);
    pipelines.push({ bytes: Buffer.from(slice.map((data) => head + bulk(data)).join('')), count: slice.length });
  }
  const { hostname, port } = new URL(url);
  const socket = connect(Number(port || 6379), hostname, () => process.send!('ready'));
  let next = 0;
  let awaited = 0;
  // Replies are `$<n>\r\n<id>\r\n` (two lines); anything else (an error) fails the run.
  let atLineStart = true;
  let linesLeft = 0;
  let cpu: NodeJS.CpuUsage;
  const write = () => {
    if (next === pipelines.length) {
      const used = process.cpuUsage(cpu);
      process.send!({ cpuMs: (used.user + used.system) / 1000 }, () => process.exit(0));
      return;
    }
    awaited = pipelines[next].count;
    socket.write(pipelines[next++].bytes);
  };
  socket.on('data', (data: Buffer) => {
    for (let i = 0; i < data.length; i++) {
      if (atLineStart && linesLeft === 0) {
        if (data[i] !== 0x24) throw new Error(`Redis refused an XADD: ${data.subarray(i, i + 200).toString()}`);
        linesLeft = 2;
      }
      atLineStart = data[i] === 0x0a;
      if (atLineStart && --linesLeft === 0 && --awaited === 0) write();
    }
  });
  process.once('message', () => {
    cpu = process.cpuUsage();
    write();
  });
});
