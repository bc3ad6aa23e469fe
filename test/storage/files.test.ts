import fs from 'node:fs';
import path from 'node:path';
import { FileStorage } from '../../src/storage';
import { tempDir } from '../support/tmp';

const root = tempDir('paperlink-files-');

describe('documents on disk (FileStorage)', () => {
  const storage = new FileStorage(path.join(root, 'documents'));
  const folderOf = (key: string) => path.join(root, 'documents', key.slice(-2));

  it('stores bytes under a new key, making its folder, and reads them back', async () => {
    const bytes = Buffer.from('%PDF-1.7 first');
    await storage.put('doc_first01', bytes);
    expect(Buffer.from((await storage.get('doc_first01'))!)).toEqual(bytes);
    expect(fs.readdirSync(folderOf('doc_first01'))).toEqual(['doc_first01']);
    // a second key in the same folder
    await storage.put('doc_second01', Buffer.from('%PDF-1.7 second'));
    expect(fs.readdirSync(folderOf('doc_first01')).sort()).toEqual(['doc_first01', 'doc_second01']);
  });

  it('replaces whatever a crashed save left under the same key, whole, with no temporary file left', async () => {
    // a save that died mid-write left part of its file and no record
    fs.mkdirSync(folderOf('doc_again02'), { recursive: true });
    fs.writeFileSync(path.join(folderOf('doc_again02'), 'doc_again02'), '%PDF-1.7 trunc');
    const bytes = Buffer.alloc(100_000, 7);
    await storage.put('doc_again02', bytes);
    expect(Buffer.from((await storage.get('doc_again02'))!)).toEqual(bytes);
    expect(fs.readdirSync(folderOf('doc_again02'))).toEqual(['doc_again02']);
  });

  it('answers undefined for a key it never stored, and refuses a key that could leave its folder', async () => {
    expect(await storage.get('doc_never03')).toBeUndefined();
    await expect(storage.put('../escape', Buffer.from('x'))).rejects.toThrow();
    expect(fs.existsSync(path.join(root, 'escape'))).toBe(false);
  });

  it('forgets a key on delete', async () => {
    await storage.put('doc_gone04', Buffer.from('%PDF-1.7'));
    await storage.delete('doc_gone04');
    expect(await storage.get('doc_gone04')).toBeUndefined();
  });
});
