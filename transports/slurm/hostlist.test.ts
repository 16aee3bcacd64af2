import { describe, expect, it } from 'vitest';
import { expandHostlist, MAX_HOSTS } from './hostlist.ts';

describe('expandHostlist (as scontrol show hostnames)', () => {
  it('expands names, ranges with their widths, lists and several brackets', () => {
    expect(expandHostlist('n1')).toEqual(['n1']);
    expect(expandHostlist('n[1-3]')).toEqual(['n1', 'n2', 'n3']);
    expect(expandHostlist('gpu[08-10,12]')).toEqual(['gpu08', 'gpu09', 'gpu10', 'gpu12']);
    expect(expandHostlist('a,b[1-2],c')).toEqual(['a', 'b1', 'b2', 'c']);
    expect(expandHostlist('r[1-2]-g[1-2]')).toEqual(['r1-g1', 'r1-g2', 'r2-g1', 'r2-g2']);
    expect(expandHostlist('n[1-2],n2')).toEqual(['n1', 'n2']);
  });

  it('says what is wrong with a bad expression', () => {
    expect(expandHostlist('n[1-2')).toEqual({ error: expect.stringMatching(/unclosed or stray bracket/) });
    expect(expandHostlist('n[3-1]')).toEqual({ error: expect.stringMatching(/the range 3-1 runs backwards/) });
    expect(expandHostlist('n[a-b]')).toEqual({ error: expect.stringMatching(/not a list of numbers and ranges/) });
    expect(expandHostlist('n1,,n2')).toEqual({ error: expect.stringMatching(/empty name/) });
    expect(expandHostlist('n b')).toEqual({ error: expect.stringMatching(/"n b" is not a node name/) });
    expect(expandHostlist(`n[1-${MAX_HOSTS + 1}]`)).toEqual({ error: expect.stringMatching(new RegExp(`more than ${MAX_HOSTS} nodes`)) });
  });
});
