const entities: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Text or an attribute value as HTML: the five characters that could end or open markup, as entities (as Eta's `<%=`). */
export const escapeHtml = (value: string): string => value.replace(/[&<>"']/g, (c) => entities[c]);
