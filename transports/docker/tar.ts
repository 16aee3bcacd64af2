/** Tar streams for the Docker archive API (files in and out of containers). */
import { createWriteStream } from 'node:fs';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import tar from 'tar-stream';

export interface TarFile {
  name: string;
  content: Buffer;
  mode: number;
}

/** The bytes of a finished tar (archives here are small: a Dockerfile, a probe binary). */
function collect(pack: tar.Pack): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    pack.on('data', (chunk: unknown) => void chunks.push(chunk as Buffer));
    pack.on('end', () => resolve(Buffer.concat(chunks)));
    pack.on('error', reject);
  });
}

/** A tar of the given files. */
export async function fileTar(files: TarFile[]): Promise<Buffer> {
  const pack = tar.pack();
  const bytes = collect(pack);
  for (const file of files) pack.entry({ name: file.name, mode: file.mode, mtime: new Date(0) }, file.content);
  pack.finalize();
  return bytes;
}

/** A tar holding one empty directory. */
export async function directoryTar(name: string): Promise<Buffer> {
  const pack = tar.pack();
  const bytes = collect(pack);
  pack.entry({ name: `${name}/`, type: 'directory', mode: 0o755, mtime: new Date(0) });
  pack.finalize();
  return bytes;
}

/** Writes the first regular file of a tar stream to `localPath`. */
export async function extractFirstFile(stream: Readable, localPath: string): Promise<void> {
  const extract = tar.extract();
  let written: Promise<void> | undefined;
  extract.on('entry', (header, entry, next) => {
    if (!written && header.type === 'file') {
      written = pipeline(entry, createWriteStream(localPath));
      written.then(() => next(), next);
    } else {
      entry.on('end', () => next());
      entry.resume();
    }
  });
  await pipeline(stream, extract);
  if (!written) throw new Error('the archive holds no file');
  await written;
}
