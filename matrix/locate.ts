/** Maps a path in the parsed matrix (targets.0.name) to a line and column in the YAML text. */
import { isMap, isNode, isPair, isScalar, isSeq, type Document, type LineCounter, type Node } from 'yaml';

export type PathKey = string | number;

export interface Position {
  line: number;
  col: number;
}

export class Locator {
  constructor(
    private readonly doc: Document,
    private readonly lines: LineCounter,
  ) {}

  /**
   * The position of the value at `path`, or of its key when `key` is set; where the path does
   * not exist (a missing key), the position of the nearest node that does.
   */
  at(path: readonly PathKey[], options: { key?: boolean } = {}): Position {
    for (let len = path.length; len >= 0; len--) {
      const sub = path.slice(0, len);
      if (options.key && len === path.length && len > 0) {
        const keyNode = this.keyNode(sub.slice(0, -1), sub[len - 1]!);
        if (keyNode) return this.pos(keyNode);
      }
      const node = this.node(sub);
      if (node) return this.pos(node);
    }
    return { line: 1, col: 1 };
  }

  private node(path: readonly PathKey[]): Node | undefined {
    const value = path.length === 0 ? this.doc.contents : this.doc.getIn(path, true);
    return isNode(value) ? value : undefined;
  }

  private keyNode(parentPath: readonly PathKey[], key: PathKey): Node | undefined {
    const parent = this.node(parentPath);
    if (!isMap(parent)) return undefined;
    for (const item of parent.items) {
      if (isPair(item) && isScalar(item.key) && String(item.key.value) === String(key)) return item.key;
    }
    return undefined;
  }

  private pos(node: Node): Position {
    const offset = node.range?.[0] ?? 0;
    const { line, col } = this.lines.linePos(offset);
    return { line, col };
  }
}

/** Depth of the deepest collection: a guard against documents built to exhaust the parser. */
export function maxDepth(node: unknown, limit: number): number {
  let deepest = 0;
  const walk = (current: unknown, depth: number): void => {
    if (depth > deepest) deepest = depth;
    if (deepest > limit) return;
    if (isMap(current)) for (const item of current.items) walk(isPair(item) ? item.value : item, depth + 1);
    else if (isSeq(current)) for (const item of current.items) walk(item, depth + 1);
  };
  walk(node, 0);
  return deepest;
}
