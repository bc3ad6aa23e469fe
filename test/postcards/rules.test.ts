import { characters, checkPostcard, mailingAddress, mergeValues } from '../../src/postcards/rules';

const valid = {
  api_token: 'plp_x',
  template_id: 'tmpl_example_postcard',
  first_name: 'Jordan',
  address_line_1: '742 Evergreen Terrace',
  address_city: 'Springfield',
  address_state: 'OR',
  address_zip: '97477',
  address_country: 'US',
};
function problems(body: Record<string, unknown>): Record<string, string> {
  const r = checkPostcard(body);
  return r.ok ? {} : Object.fromEntries(r.details.map((d) => [d.field, d.code ?? '']));
}

describe('postcard request rules', () => {
  it('accepts the sample request and keeps unknown fields as custom data', () => {
    const r = checkPostcard({
      ...valid,
      email: 'j@example.com',
      source: 'website',
      tagline: 'Hello',
      coupon: 'POWDER26',
    });
    expect(r.ok && r.value.custom).toEqual({ tagline: 'Hello', coupon: 'POWDER26' });
    expect(r.ok && r.value.contact).toEqual({ first_name: 'Jordan', email: 'j@example.com', source: 'website' });
  });

  it('needs first_name or last_name, not blank', () => {
    expect(problems({ ...valid, first_name: undefined, last_name: 'Alvarez' })).toEqual({});
    expect(problems({ ...valid, first_name: '   ', last_name: '\t' })).toEqual({ first_name: 'required' });
    expect(problems({ ...valid, first_name: undefined })).toEqual({ first_name: 'required' });
  });

  it('counts address_line_1 in characters: 64 pass, 65 fail, multi-byte letters count once', () => {
    expect(problems({ ...valid, address_line_1: 'a'.repeat(64) })).toEqual({});
    expect(problems({ ...valid, address_line_1: 'a'.repeat(65) })).toEqual({ address_line_1: 'too_long' });
    expect(characters('Łódź')).toBe(4);
    expect(characters('Lo\u0301dz\u0301')).toBe(4); // decomposed accents count as the letters they make
    expect(problems({ ...valid, address_line_1: 'Łódź'.repeat(16) })).toEqual({});
    expect(problems({ ...valid, address_line_1: 'Łódź'.repeat(16) + 'x' })).toEqual({ address_line_1: 'too_long' });
    expect(problems({ ...valid, address_line_1: '🏠'.repeat(64) })).toEqual({});
  });

  it('checks the country against ISO 3166-1, in any case, and stores it upper-case', () => {
    const r = checkPostcard({ ...valid, address_country: 'de', address_state: 'be' });
    expect(r.ok && r.value.address).toMatchObject({ address_country: 'DE', address_state: 'BE' });
    expect(problems({ ...valid, address_country: 'XX' })).toEqual({ address_country: 'unknown_country' });
    expect(problems({ ...valid, address_country: 'USA' })).toEqual({ address_country: 'too_long' });
    expect(problems({ ...valid, address_country: 'U1' })).toEqual({ address_country: 'invalid' });
  });

  it('checks a US state or territory code, and only two letters elsewhere', () => {
    for (const state of ['ca', 'DC', 'PR', 'GU']) expect(problems({ ...valid, address_state: state })).toEqual({});
    expect(problems({ ...valid, address_state: 'XX' })).toEqual({ address_state: 'unknown_state' });
    expect(problems({ ...valid, address_state: 'Oregon' })).toEqual({ address_state: 'too_long' });
    expect(problems({ ...valid, address_state: 'O1' })).toEqual({ address_state: 'invalid' });
    expect(problems({ ...valid, address_country: 'CA', address_state: 'ON', address_zip: 'K1A 0B1' })).toEqual({});
  });

  it('reports every missing or broken field at once', () => {
    expect(problems({ first_name: 5, email: 'nope', custom: { a: 1 } })).toEqual({
      api_token: 'required',
      template_id: 'required',
      address_line_1: 'required',
      address_city: 'required',
      address_zip: 'required',
      address_state: 'required',
      address_country: 'required',
      first_name: 'type',
      email: 'invalid_email',
      custom: 'type',
    });
    expect(problems({ ...valid, note: 'x'.repeat(2001) })).toEqual({ note: 'too_long' });
    expect(checkPostcard([1, 2])).toEqual({
      ok: false,
      details: [expect.objectContaining({ field: 'body', code: 'type' })],
    });
  });

  it('fills merge fields from contact, address and custom data by name', () => {
    const r = checkPostcard({ ...valid, last_name: 'Alvarez', tagline: 'Hi' });
    expect(r.ok && mergeValues(r.value)).toMatchObject({
      first_name: 'Jordan',
      last_name: 'Alvarez',
      address_city: 'Springfield',
      tagline: 'Hi',
    });
  });

  it("checks the postal code of the sizes' countries by its shape, and writes it as that post does for the partner", () => {
    const mailing = (address_country: string, address_zip: string, address_state = 'OR') => {
      const r = checkPostcard({ ...valid, address_country, address_zip, address_state });
      if (!r.ok) return r.details.map((d) => `${d.field}:${d.code}`);
      return mailingAddress(r.value.address).address_zip;
    };
    expect(mailing('US', '97477')).toBe('97477');
    expect(mailing('US', '974771234')).toBe('97477-1234');
    expect(mailing('US', '97477 - 1234')).toBe('97477-1234');
    expect(mailing('US', '9747')).toEqual(['address_zip:invalid']);
    expect(mailing('US', 'K1A 0B1')).toEqual(['address_zip:invalid']);
    expect(mailing('CA', 'k1a0b1', 'ON')).toBe('K1A 0B1');
    expect(mailing('GB', 'sw1a1aa', 'LN')).toBe('SW1A 1AA');
    expect(mailing('GB', 'ec1a 1bb', 'LN')).toBe('EC1A 1BB');
    expect(mailing('GB', '12345', 'LN')).toEqual(['address_zip:invalid']);
    expect(mailing('DE', '10115', 'BE')).toBe('10115');
    // another country's code is passed on as given, in capitals
    expect(mailing('NL', '1011 ab', 'NH')).toBe('1011 AB');
    const r = checkPostcard({ ...valid, address_line_1: '  742   evergreen  terrace ', address_city: 'springfield' });
    expect(r.ok && mailingAddress(r.value.address)).toMatchObject({
      address_line_1: '742 EVERGREEN TERRACE',
      address_city: 'SPRINGFIELD',
    });
    // the request's own address is kept as it came (trimmed)
    expect(r.ok && r.value.address.address_line_1).toBe('742   evergreen  terrace');
  });
});
