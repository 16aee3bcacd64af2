/**
 * Docker image references, checked as Docker checks them (the grammar of
 * github.com/distribution/reference, which the Docker CLI and engine use):
 *
 *   reference  := name [":" tag] ["@" digest]
 *   name       := [domain "/"] path-component ["/" path-component]*   (at most 255 characters)
 *   domain     := host [":" port]; it is a domain only when it has a "." or a ":" or is "localhost"
 *   host       := domain-component ["." domain-component]* | "[" IPv6 "]"   (upper case allowed)
 *   path-component := [a-z0-9]+ (separator [a-z0-9]+)*,  separator := [._] | "__" | "-"+
 *   tag        := [\w][\w.-]{0,127}
 *   digest     := algorithm ":" hex{32,}
 *
 * A reference the engine would refuse ("invalid reference format: repository name must be
 * lowercase") is a matrix error at its line, not a target that fails when it connects.
 */

const domainComponent = String.raw`(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])`;
const port = String.raw`(?::[0-9]+)`;
/** A first component that Docker reads as a registry: it has a "." or a port, is an IPv6 address, or is localhost. */
const domain = String.raw`(?:(?:${domainComponent}(?:\.${domainComponent})+|\[[a-fA-F0-9:]+\]|localhost)${port}?|${domainComponent}${port})`;
const pathComponent = String.raw`[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*`;
const tag = String.raw`[\w][\w.-]{0,127}`;
const digest = String.raw`[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}`;

/** The grammar as one regular expression (for the JSON Schema; the length limit is the loader's). */
export const IMAGE_REFERENCE_PATTERN = String.raw`^(?:${domain}/)?${pathComponent}(?:/${pathComponent})*(?::${tag})?(?:@${digest})?$`;
const reference = new RegExp(IMAGE_REFERENCE_PATTERN);
const NAME_MAX = 255;

/** What is wrong with an image reference, with the fix; undefined when Docker would take it. */
export function imageReferenceProblem(ref: string): { message: string; fix: string } | undefined {
  const quoted = JSON.stringify(ref);
  const grammar = 'Docker writes an image as [registry[:port]/]name[:tag][@digest], e.g. nvidia/cuda:12.6.3-base-ubuntu24.04';
  // Split as Docker does: the digest after "@", the tag after the last ":" that has no "/" after it.
  const at = ref.indexOf('@');
  const beforeDigest = at >= 0 ? ref.slice(0, at) : ref;
  const digestPart = at >= 0 ? ref.slice(at + 1) : undefined;
  const colon = beforeDigest.lastIndexOf(':');
  const hasTag = colon > beforeDigest.lastIndexOf('/');
  const name = hasTag ? beforeDigest.slice(0, colon) : beforeDigest;
  const tagPart = hasTag ? beforeDigest.slice(colon + 1) : undefined;
  const slash = name.indexOf('/');
  const first = slash >= 0 ? name.slice(0, slash) : undefined;
  const isDomain = first !== undefined && (/[.:]/.test(first) || first === 'localhost' || first.startsWith('['));
  const repository = isDomain ? name.slice(slash + 1) : name;

  if (/\s/.test(ref)) return { message: `${quoted} is not a Docker image reference: it has white space in it`, fix: grammar };
  if (name.length > NAME_MAX)
    return {
      message: `${quoted} is not a Docker image reference: its name is longer than ${NAME_MAX} characters`,
      fix: 'use a shorter name',
    };
  if (/[A-Z]/.test(repository)) {
    const lower = `${isDomain ? `${first}/` : ''}${repository.toLowerCase()}${tagPart !== undefined ? `:${tagPart}` : ''}${digestPart !== undefined ? `@${digestPart}` : ''}`;
    return {
      message: `${quoted} is not a Docker image reference: the repository name ("${repository}") must be lower case (Docker refuses it: "invalid reference format: repository name must be lowercase")`,
      fix: `write ${JSON.stringify(lower)}${isDomain ? ' (the registry host may keep its case; a tag may have upper case)' : ' (a tag may have upper case)'}`,
    };
  }
  if (tagPart !== undefined && !new RegExp(`^${tag}$`).test(tagPart)) {
    return {
      message: `${quoted} is not a Docker image reference: the tag ${JSON.stringify(tagPart)} is not one (letters, digits, "_", "." and "-", at most 128, not starting with "." or "-")`,
      fix: grammar,
    };
  }
  if (digestPart !== undefined && !new RegExp(`^${digest}$`).test(digestPart)) {
    return {
      message: `${quoted} is not a Docker image reference: the digest ${JSON.stringify(digestPart)} is not one (algorithm:hex, e.g. sha256: and 64 hex digits)`,
      fix: grammar,
    };
  }
  if (!reference.test(ref)) {
    return {
      message: `${quoted} is not a Docker image reference: path components are lower-case letters and digits, separated by "/" and joined by ".", "_", "__" or "-"`,
      fix: grammar,
    };
  }
  return undefined;
}
