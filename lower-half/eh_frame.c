/* Reading .eh_frame_hdr and .eh_frame (see eh_frame.h).  The formats are the Linux Standard
 * Base's "Exception Frames" and DWARF's call frame instructions; only what locating an entry
 * and the CFA rule need is decoded, the rest is skipped by its size. */
#include "eh_frame.h"

#include <stddef.h>

/* Pointer encodings (DW_EH_PE_*): a format in the low nibble, what it is relative to above. */
enum {
  PE_ABSPTR = 0x00,
  PE_ULEB128 = 0x01,
  PE_UDATA2 = 0x02,
  PE_UDATA4 = 0x03,
  PE_UDATA8 = 0x04,
  PE_SLEB128 = 0x09,
  PE_SDATA2 = 0x0a,
  PE_SDATA4 = 0x0b,
  PE_SDATA8 = 0x0c,
  PE_FORMAT = 0x0f,
  PE_PCREL = 0x10,
  PE_DATAREL = 0x30,
  PE_RELATIVE = 0x70,
  PE_INDIRECT = 0x80,
};

/* Bytes read in order, up to `end`; `bad` once anything did not fit or made no sense. */
struct cursor {
  const uint8_t *p, *end;
  int bad;
};

static uint64_t fixed(struct cursor *c, int n)
{
  if (c->bad || c->end - c->p < n) {
    c->bad = 1;
    return 0;
  }
  uint64_t v = 0;
  for (int i = 0; i < n; i++)
    v |= (uint64_t)c->p[i] << (8 * i);
  c->p += n;
  return v;
}

static uint64_t uleb(struct cursor *c)
{
  uint64_t v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    uint64_t b = fixed(c, 1);
    v |= (b & 0x7f) << shift;
    if (!(b & 0x80) || c->bad)
      return v;
  }
  c->bad = 1;
  return 0;
}

static int64_t sleb(struct cursor *c)
{
  uint64_t v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    uint64_t b = fixed(c, 1);
    v |= (b & 0x7f) << shift;
    if (c->bad)
      return 0;
    if (!(b & 0x80)) {
      if ((b & 0x40) && shift + 7 < 64)
        v |= ~(uint64_t)0 << (shift + 7);
      return (int64_t)v;
    }
  }
  c->bad = 1;
  return 0;
}

static void skip(struct cursor *c, uint64_t n)
{
  if (c->bad || (uint64_t)(c->end - c->p) < n)
    c->bad = 1;
  else
    c->p += n;
}

/* A pointer in encoding `enc`; `base` is what PE_DATAREL is relative to. */
static uint64_t pointer(struct cursor *c, uint8_t enc, uint64_t base)
{
  uint64_t at = (uint64_t)(uintptr_t)c->p, v;
  switch (enc & PE_FORMAT) {
  case PE_ABSPTR:
  case PE_UDATA8:
  case PE_SDATA8:
    v = fixed(c, 8);
    break;
  case PE_UDATA4:
    v = fixed(c, 4);
    break;
  case PE_SDATA4:
    v = (uint64_t)(int64_t)(int32_t)(uint32_t)fixed(c, 4);
    break;
  case PE_UDATA2:
    v = fixed(c, 2);
    break;
  case PE_SDATA2:
    v = (uint64_t)(int64_t)(int16_t)(uint16_t)fixed(c, 2);
    break;
  case PE_ULEB128:
    v = uleb(c);
    break;
  case PE_SLEB128:
    v = (uint64_t)sleb(c);
    break;
  default:
    c->bad = 1;
    return 0;
  }
  switch (enc & PE_RELATIVE) {
  case 0:
    break;
  case PE_PCREL:
    v += at;
    break;
  case PE_DATAREL:
    v += base;
    break;
  default:
    c->bad = 1;
  }
  if (enc & PE_INDIRECT) /* never used for the fields read here */
    c->bad = 1;
  return v;
}

/* The length field of a CIE or FDE; the record then ends at c->end.  64-bit records (length
 * 0xffffffff) and the terminator (0) are not what an FDE lookup can meet. */
static int record(struct cursor *c, const uint8_t *at)
{
  c->p = at;
  c->end = at + 4;
  c->bad = 0;
  uint64_t len = fixed(c, 4);
  if (c->bad || len == 0 || len >= 0xfffffff0u)
    return -1;
  c->end = c->p + len;
  return 0;
}

struct cie {
  uint64_t code_align;
  int64_t data_align;
  uint8_t fde_enc;
  int has_z; /* FDEs have an augmentation data length */
  struct cursor instructions;
};

static int read_cie(const uint8_t *at, struct cie *cie)
{
  struct cursor c;
  if (record(&c, at) != 0 || fixed(&c, 4) != 0) /* a CIE's id is 0 */
    return -1;
  uint64_t version = fixed(&c, 1);
  const uint8_t *aug = c.p;
  while (fixed(&c, 1) != 0 && !c.bad)
    ;
  if (c.bad || (version != 1 && version != 3))
    return -1;
  cie->code_align = uleb(&c);
  cie->data_align = sleb(&c);
  if (version == 1)
    fixed(&c, 1);
  else
    uleb(&c);
  cie->fde_enc = PE_ABSPTR;
  cie->has_z = aug[0] == 'z';
  if (cie->has_z) {
    uint64_t len = uleb(&c);
    struct cursor a = {c.p, c.p + len, 0};
    skip(&c, len);
    for (const uint8_t *k = aug + 1; *k && !a.bad; k++) {
      if (*k == 'R')
        cie->fde_enc = (uint8_t)fixed(&a, 1);
      else if (*k == 'P')
        pointer(&a, (uint8_t)fixed(&a, 1), 0);
      else if (*k == 'L')
        fixed(&a, 1);
      else if (*k != 'S')
        break; /* unknown letters end what can be read; the data length still skips it all */
    }
  } else if (aug[0]) {
    return -1;
  }
  cie->instructions = c;
  return c.bad ? -1 : 0;
}

struct fde {
  uint64_t lo, hi;
  struct cie cie;
  struct cursor instructions;
};

static int read_fde(const uint8_t *at, struct fde *f)
{
  struct cursor c;
  if (record(&c, at) != 0)
    return -1;
  const uint8_t *id_at = c.p;
  uint64_t back = fixed(&c, 4);
  if (c.bad || back == 0 || read_cie(id_at - back, &f->cie) != 0)
    return -1;
  f->lo = pointer(&c, f->cie.fde_enc, 0);
  uint64_t range = pointer(&c, f->cie.fde_enc & PE_FORMAT, 0);
  f->hi = f->lo + range;
  if (f->cie.has_z)
    skip(&c, uleb(&c));
  f->instructions = c;
  return c.bad || f->hi < f->lo ? -1 : 0;
}

uint64_t mana_eh_frame_find(uint64_t hdr, uint64_t pc, uint64_t *lo, uint64_t *hi)
{
  const uint8_t *h = (const uint8_t *)(uintptr_t)hdr;
  struct cursor c = {h, h + 4 + 2 * 8, 0};
  uint64_t version = fixed(&c, 1);
  uint8_t ptr_enc = (uint8_t)fixed(&c, 1), count_enc = (uint8_t)fixed(&c, 1);
  uint8_t table_enc = (uint8_t)fixed(&c, 1);
  if (version != 1 || ptr_enc == 0xff || count_enc == 0xff)
    return 0;
  pointer(&c, ptr_enc, hdr);
  uint64_t count = pointer(&c, count_enc, hdr);
  /* Only the table every linker writes can be searched without decoding every entry. */
  if (c.bad || table_enc != (PE_DATAREL | PE_SDATA4) || count == 0 || count > (1u << 26))
    return 0;
  const uint8_t *table = c.p;
  uint64_t first = 0, last = count; /* the last entry starting at or below pc is in [first, last) */
  while (last - first > 1) {
    uint64_t mid = first + (last - first) / 2;
    struct cursor e = {table + 8 * mid, table + 8 * mid + 4, 0};
    if (pointer(&e, table_enc, hdr) <= pc)
      first = mid;
    else
      last = mid;
  }
  struct cursor e = {table + 8 * first, table + 8 * first + 8, 0};
  uint64_t start = pointer(&e, table_enc, hdr), fde = pointer(&e, table_enc, hdr);
  struct fde f;
  if (e.bad || start > pc || read_fde((const uint8_t *)(uintptr_t)fde, &f) != 0 || pc < f.lo ||
      pc >= f.hi)
    return 0;
  *lo = f.lo;
  *hi = f.hi;
  return fde;
}

struct cfa_rule {
  int reg;
  int64_t offset;
};

enum { STATE_STACK = 8 };

struct cfa_state {
  struct cfa_rule cfa;
  struct cfa_rule saved[STATE_STACK];
  int depth;
};

/* Runs instructions until the location passes pc: 0, or -1 on what is not followed. */
static int run(struct cursor *c, const struct cie *cie, uint64_t loc, uint64_t pc,
               struct cfa_state *s)
{
  while (c->p < c->end && !c->bad) {
    uint8_t op = (uint8_t)fixed(c, 1);
    uint64_t advance = 0;
    switch (op & 0xc0) {
    case 0x40: /* advance_loc */
      advance = (op & 0x3f) * cie->code_align;
      break;
    case 0x80: /* offset: a register's rule */
      uleb(c);
      continue;
    case 0xc0: /* restore: a register's rule */
      continue;
    default:
      switch (op) {
      case 0x00: /* nop */
        continue;
      case 0x01: /* set_loc */
        loc = pointer(c, cie->fde_enc, 0);
        if (loc > pc)
          return 0;
        continue;
      case 0x02:
        advance = fixed(c, 1) * cie->code_align;
        break;
      case 0x03:
        advance = fixed(c, 2) * cie->code_align;
        break;
      case 0x04:
        advance = fixed(c, 4) * cie->code_align;
        break;
      case 0x05: /* offset_extended */
      case 0x09: /* register */
      case 0x14: /* val_offset */
      case 0x2f: /* GNU_negative_offset_extended */
        uleb(c);
        uleb(c);
        continue;
      case 0x11: /* offset_extended_sf */
      case 0x15: /* val_offset_sf */
        uleb(c);
        sleb(c);
        continue;
      case 0x06: /* restore_extended */
      case 0x07: /* undefined */
      case 0x08: /* same_value */
      case 0x2e: /* GNU_args_size */
        uleb(c);
        continue;
      case 0x10: /* expression */
      case 0x16: /* val_expression */
        uleb(c);
        skip(c, uleb(c));
        continue;
      case 0x0a: /* remember_state */
        if (s->depth == STATE_STACK)
          return -1;
        s->saved[s->depth++] = s->cfa;
        continue;
      case 0x0b: /* restore_state */
        if (s->depth == 0)
          return -1;
        s->cfa = s->saved[--s->depth];
        continue;
      case 0x0c: /* def_cfa */
        s->cfa.reg = (int)uleb(c);
        s->cfa.offset = (int64_t)uleb(c);
        continue;
      case 0x0d: /* def_cfa_register */
        s->cfa.reg = (int)uleb(c);
        continue;
      case 0x0e: /* def_cfa_offset */
        s->cfa.offset = (int64_t)uleb(c);
        continue;
      case 0x12: /* def_cfa_sf */
        s->cfa.reg = (int)uleb(c);
        s->cfa.offset = sleb(c) * cie->data_align;
        continue;
      case 0x13: /* def_cfa_offset_sf */
        s->cfa.offset = sleb(c) * cie->data_align;
        continue;
      default: /* def_cfa_expression, or an operation this reader does not know */
        return -1;
      }
    }
    loc += advance;
    if (loc > pc)
      return 0;
  }
  return c->bad ? -1 : 0;
}

int mana_eh_frame_cfa(uint64_t fde, uint64_t pc, int *reg, int64_t *offset)
{
  struct fde f;
  if (read_fde((const uint8_t *)(uintptr_t)fde, &f) != 0 || pc < f.lo || pc >= f.hi)
    return -1;
  struct cfa_state s = {.cfa = {-1, 0}};
  struct cursor initial = f.cie.instructions, own = f.instructions;
  if (run(&initial, &f.cie, 0, UINT64_MAX, &s) != 0 || run(&own, &f.cie, f.lo, pc, &s) != 0 ||
      s.cfa.reg < 0)
    return -1;
  *reg = s.cfa.reg;
  *offset = s.cfa.offset;
  return 0;
}
