import type { X509Certificate } from 'node:crypto';
import forge from 'node-forge';

/**
 * X.500 distinguished names in the form Keycloak's X.509 client authenticator compares them: Java's
 * `X500Principal.getName("RFC2253", …)` with Keycloak's extra attribute names. RDNs last-to-first, separated by `,`,
 * several attributes of one RDN by `+`; the attribute keywords Java knows (CN, C, L, ST, O, OU, DC, UID, STREET) and
 * Keycloak's (serialNumber, businessCategory, jurisdictionCountryName, emailAddress) by name, any other as
 * `<oid>=#<hex of its DER value>`; values escaped as RFC 2253 2.4.
 */

const NAME_OF_OID: Record<string, string> = {
  '2.5.4.3': 'CN',
  '2.5.4.6': 'C',
  '2.5.4.7': 'L',
  '2.5.4.8': 'ST',
  '2.5.4.10': 'O',
  '2.5.4.11': 'OU',
  '0.9.2342.19200300.100.1.25': 'DC',
  '0.9.2342.19200300.100.1.1': 'UID',
  '2.5.4.9': 'STREET',
  '2.5.4.5': 'serialNumber',
  '2.5.4.15': 'businessCategory',
  '1.3.6.1.4.1.311.60.2.1.3': 'jurisdictionCountryName',
  '1.2.840.113549.1.9.1': 'emailAddress',
};

/** Keywords accepted when a DN is written by hand (case-insensitive), to their OID; `E` and `EMAIL` are e-mail, as Keycloak reads them. */
const OID_OF_NAME: Record<string, string> = {
  ...Object.fromEntries(Object.entries(NAME_OF_OID).map(([oid, name]) => [name.toLowerCase(), oid])),
  e: '1.2.840.113549.1.9.1',
  email: '1.2.840.113549.1.9.1',
  s: '2.5.4.8',
};

/** RFC 2253 2.4: `,+"\<>;` escaped anywhere, `#` and space at the start, space at the end. */
function escapeValue(value: string): string {
  let out = value.replace(/[,+"\\<>;]/g, (c) => `\\${c}`);
  if (out.startsWith('#') || out.startsWith(' ')) out = `\\${out}`;
  if (out.endsWith(' ') && !out.endsWith('\\ ')) out = `${out.slice(0, -1)}\\ `;
  return out;
}

/** The DER string types whose value is text (UTF8String, PrintableString, T61String, IA5String, UniversalString, BMPString). */
const TEXT_TYPES = new Set([12, 19, 20, 22, 28, 30]);

function attributeText(oid: string, value: forge.asn1.Asn1): string {
  const name = NAME_OF_OID[oid];
  if (name && value.tagClass === forge.asn1.Class.UNIVERSAL && TEXT_TYPES.has(value.type) && typeof value.value === 'string') {
    let text = value.value;
    if (value.type === 12) text = forge.util.decodeUtf8(text);
    else if (value.type === 30) text = Buffer.from(text, 'binary').swap16().toString('utf16le');
    return `${name}=${escapeValue(text)}`;
  }
  return `${oid}=#${forge.util.bytesToHex(forge.asn1.toDer(value).getBytes())}`;
}

/** The subject (or issuer) Name of a certificate, as Keycloak's authenticator writes it. Throws on a malformed certificate. */
export function certificateDn(certificate: X509Certificate, which: 'subject' | 'issuer' = 'subject'): string {
  const der = forge.util.createBuffer(certificate.raw.toString('binary'));
  const root = forge.asn1.fromDer(der, false);
  const tbs = (root.value as forge.asn1.Asn1[])[0].value as forge.asn1.Asn1[];
  // [0] version is optional; then serial, signature algorithm, issuer, validity, subject.
  const start = tbs[0].tagClass === forge.asn1.Class.CONTEXT_SPECIFIC ? 1 : 0;
  const name = tbs[start + (which === 'issuer' ? 2 : 4)].value as forge.asn1.Asn1[];
  const rdns = name.map((rdn) =>
    (rdn.value as forge.asn1.Asn1[])
      .map((atv) => {
        const [type, value] = atv.value as forge.asn1.Asn1[];
        return attributeText(forge.asn1.derToOid(forge.util.createBuffer(type.value as string)), value);
      })
      .join('+'),
  );
  return rdns.reverse().join(',');
}

/**
 * A distinguished name written by an administrator (`x509.subjectdn` without regex comparison), in the same form as
 * `certificateDn` makes, so the two compare as strings: spaces around separators dropped, keywords to their canonical
 * name, values re-escaped (quoted values taken). Null when it is not a DN.
 */
export function normalizeDn(text: string): string | null {
  const rdns: string[] = [];
  let attributes: string[] = [];
  let i = 0;
  const s = text.trim();
  if (s === '') return null;
  while (i <= s.length) {
    // type
    const eq = s.indexOf('=', i);
    if (eq < 0) return null;
    const rawType = s.slice(i, eq).trim();
    let type: string;
    const oidForm = /^(?:oid\.)?(\d+(?:\.\d+)+)$/i.exec(rawType);
    if (oidForm) type = NAME_OF_OID[oidForm[1]] ?? oidForm[1];
    else {
      const oid = OID_OF_NAME[rawType.toLowerCase()];
      if (!oid) return null;
      type = NAME_OF_OID[oid];
    }
    // value
    i = eq + 1;
    while (s[i] === ' ') i++;
    let value = '';
    if (s[i] === '"') {
      i++;
      while (i < s.length && s[i] !== '"') {
        if (s[i] === '\\') i++;
        value += s[i] ?? '';
        i++;
      }
      if (s[i] !== '"') return null;
      i++;
      while (s[i] === ' ') i++;
    } else if (s[i] === '#') {
      const hex = /^#[0-9a-fA-F]*/.exec(s.slice(i))![0];
      value = hex.toLowerCase();
      i += hex.length;
      while (s[i] === ' ') i++;
    } else {
      let trailing = '';
      while (i < s.length && !',;+'.includes(s[i])) {
        if (s[i] === '\\') {
          const pair = /^\\([0-9a-fA-F]{2})/.exec(s.slice(i));
          if (pair) {
            value += trailing + String.fromCharCode(parseInt(pair[1], 16));
            i += 3;
          } else {
            value += trailing + (s[i + 1] ?? '');
            i += 2;
          }
          trailing = '';
          continue;
        }
        if (s[i] === ' ') trailing += ' ';
        else {
          value += trailing + s[i];
          trailing = '';
        }
        i++;
      }
    }
    attributes.push(value.startsWith('#') && /^#[0-9a-f]*$/.test(value) ? `${type}=${value}` : `${type}=${escapeValue(value)}`);
    if (i >= s.length) {
      rdns.push(attributes.join('+'));
      break;
    }
    const separator = s[i];
    i++;
    if (separator === '+') continue;
    if (separator !== ',' && separator !== ';') return null;
    rdns.push(attributes.join('+'));
    attributes = [];
  }
  return rdns.join(',');
}

/** Keycloak's client attributes of the `client-x509` authenticator. */
export const X509_SUBJECT_DN = 'x509.subjectdn';
export const X509_REGEX_COMPARISON = 'x509.allow.regex.pattern.comparison';
export const X509_CA_SUBJECT_DN = 'x509.casubjectdn';

/** `x509.subjectdn` as Java's String.matches reads it (the whole DN must match); null when it does not compile. */
export function subjectDnPattern(pattern: string): RegExp | null {
  try {
    return new RegExp(`^(?:${pattern})$`, 'u');
  } catch {
    return null;
  }
}
