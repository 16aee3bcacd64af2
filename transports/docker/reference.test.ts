import { describe, expect, it } from 'vitest';
import { IMAGE_REFERENCE_PATTERN, imageReferenceProblem } from './reference.ts';

describe('Docker image references', () => {
  // What the Docker CLI and engine take (checked by hand with docker create on docker.io 20.10).
  it.each([
    'nvidia/cuda:12.6.3-base-ubuntu24.04',
    'nvidia/cuda:12.6.3-base-Ubuntu24.04', // a tag may have upper case
    'ubuntu',
    'scratch',
    'cudamatrix-probe:0123456789abcdef-0123456789ab',
    'exp-base:Latest',
    'registry.example/train:2026.11',
    'Registry.Example.com/foo:1', // a registry host may have upper case
    'localhost/foo',
    'localhost:5000/team/foo_bar__baz.qux-x--y:v1',
    'gpu-box:5000/foo',
    '[::1]:5000/foo',
    `nvidia/cuda@sha256:${'a'.repeat(64)}`,
    `nvidia/cuda:12@sha256:${'A'.repeat(64)}`,
  ])('takes %s', (ref) => {
    expect(imageReferenceProblem(ref)).toBeUndefined();
    expect(new RegExp(IMAGE_REFERENCE_PATTERN, 'u').test(ref)).toBe(true);
  });

  it.each([
    ['NVIDIA/cuda:12', 'the repository name ("NVIDIA/cuda") must be lower case', 'write "nvidia/cuda:12"'],
    ['Nvidia/cuda', 'must be lower case', 'write "nvidia/cuda"'],
    [
      'nvidia/CUDA:12.6.3-base-ubuntu24.04',
      'the repository name ("nvidia/CUDA") must be lower case',
      'write "nvidia/cuda:12.6.3-base-ubuntu24.04"',
    ],
    ['Exp-base', 'must be lower case', 'write "exp-base"'],
    [
      'localhost:5000/Foo',
      'the repository name ("Foo") must be lower case',
      'write "localhost:5000/foo" (the registry host may keep its case',
    ],
    ['nvidia/cuda:-x', 'the tag "-x" is not one', 'Docker writes an image as'],
    [`nvidia/cuda:${'x'.repeat(129)}`, 'is not one', 'Docker writes an image as'],
    ['a//b', 'path components are lower-case', 'Docker writes an image as'],
    ['nvidia/cuda@sha256:abc', 'the digest "sha256:abc" is not one', 'Docker writes an image as'],
    ['-foo', 'path components are lower-case', 'Docker writes an image as'],
    ['foo bar', 'white space', 'Docker writes an image as'],
    [`a/${'b'.repeat(260)}`, 'longer than 255', 'shorter'],
  ])('refuses %s', (ref, message, fix) => {
    const problem = imageReferenceProblem(ref);
    expect(problem?.message).toContain(message);
    expect(problem?.fix).toContain(fix);
    if (ref.length < 255) expect(new RegExp(IMAGE_REFERENCE_PATTERN, 'u').test(ref)).toBe(false);
  });
});
