/**
 * The sidebar's one guard on model-written text: a stricter sanitizer for its rendermime.
 *
 * JupyterLab's own sanitizer (what `trusted: false` runs) removes scripts and event handlers but
 * keeps what loads from elsewhere (an `<img src="http://...">` tells its server who read what,
 * the classic way to exfiltrate what a model saw), styles, forms' pieces and command-linker
 * attributes (a click runs a JupyterLab command). Model text is a stranger's, so here only an
 * allow-list survives, the same as nini.safe_html on the server side: no script, handler, iframe,
 * form, style or `data-*`; links are http, https, mailto or relative; an image stays only as an
 * embedded `data:image/...` URI, any other becomes its alt text.
 */
import { Sanitizer } from '@jupyterlab/apputils';
import { IRenderMime, IRenderMimeRegistry } from '@jupyterlab/rendermime';

const TAGS = [
  'a',
  'abbr',
  'b',
  'blockquote',
  'br',
  'caption',
  'code',
  'dd',
  'del',
  'details',
  'div',
  'dl',
  'dt',
  'em',
  'h1',
  'h2',
  'h3',
  'h4',
  'h5',
  'h6',
  'hr',
  'i',
  'img',
  'ins',
  'kbd',
  'li',
  'mark',
  'ol',
  'p',
  'pre',
  'q',
  's',
  'samp',
  'small',
  'span',
  'strong',
  'sub',
  'summary',
  'sup',
  'table',
  'tbody',
  'td',
  'tfoot',
  'th',
  'thead',
  'tr',
  'u',
  'ul'
];
const DATA_IMAGE =
  /^data:image\/(?:png|jpeg|gif|webp|svg\+xml);base64,[A-Za-z0-9+/=\s]*$/i;
const LINK_REL = 'noopener noreferrer nofollow';

type Attributes = Record<string, string>;

/** sanitize-html's options (JupyterLab passes them through; its own typing names only a few). */
const STRICT = {
  allowedTags: TAGS,
  allowedAttributes: {
    a: ['href', 'title', 'rel', 'target'],
    img: ['src', 'alt', 'title', 'width', 'height'],
    ol: ['start'],
    td: ['colspan', 'rowspan'],
    th: ['colspan', 'rowspan'],
    abbr: ['title'],
    code: ['class'], // the code's language and its highlighting (JupyterLab's Markdown parser)
    span: ['class']
  },
  allowedClasses: { code: ['language-*'], span: ['cm-*', 'ͼ*'] },
  allowedStyles: {},
  allowedSchemes: ['http', 'https', 'mailto'],
  allowedSchemesByTag: { img: ['data'] },
  allowedSchemesAppliedToAttributes: ['href', 'src', 'cite'],
  allowProtocolRelative: false,
  disallowedTagsMode: 'discard',
  nonTextTags: [
    'script',
    'style',
    'textarea',
    'option',
    'noscript',
    'template',
    'title',
    'iframe',
    'object'
  ],
  transformTags: {
    a: (tagName: string, attribs: Attributes) => ({
      tagName,
      attribs: { ...attribs, rel: LINK_REL, target: '_blank' }
    }),
    // an image not embedded would be fetched: its alt text shows instead
    img: (tagName: string, attribs: Attributes) =>
      DATA_IMAGE.test((attribs.src ?? '').trim())
        ? { tagName, attribs: { ...attribs, src: attribs.src.trim() } }
        : { tagName: 'span', attribs: {}, text: attribs.alt ?? '' }
  }
};

/** JupyterLab's sanitizer with the allow-list above, whatever options a renderer passes. */
export class StrictSanitizer implements IRenderMime.ISanitizer {
  private readonly inner = new Sanitizer();
  readonly allowNamedProperties = false;
  readonly allowCommandLinker = false;

  sanitize(dirty: string, options?: IRenderMime.ISanitizerOptions): string {
    return this.inner.sanitize(dirty, {
      ...options,
      ...STRICT
    } as IRenderMime.ISanitizerOptions);
  }

  getAutolink(): boolean {
    return this.inner.getAutolink();
  }
}

const STRICT_REGISTRIES = new WeakMap<
  IRenderMimeRegistry,
  IRenderMimeRegistry
>();

/** The app's rendermime with the strict sanitizer: one clone per registry, made on first use. */
export function strictRendermime(
  rendermime: IRenderMimeRegistry
): IRenderMimeRegistry {
  let strict = STRICT_REGISTRIES.get(rendermime);
  if (strict === undefined) {
    strict = rendermime.clone({ sanitizer: new StrictSanitizer() });
    STRICT_REGISTRIES.set(rendermime, strict);
  }
  return strict;
}
