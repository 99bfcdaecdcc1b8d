// pbon::valid_utf8, the repair every generated answer goes through before it is embedded,
// printed or written as JSON (a token cap can stop an answer inside a multi-byte character).
// Expected outputs follow the Unicode standard's "U+FFFD per maximal subpart" practice, which
// Python's bytes.decode("utf-8", "replace") also follows (the cases were checked against it).
#include <cstdio>
#include <string>

#include "pbon.hpp"

namespace {

int failures = 0;

std::string hex(const std::string &s) {
    std::string out;
    char buf[4];
    for (unsigned char c : s) {
        std::snprintf(buf, sizeof buf, "%02X ", c);
        out += buf;
    }
    return out;
}

void expect(const char *what, const std::string &in, const std::string &want) {
    std::string got = pbon::valid_utf8(in);
    if (got != want) {
        ++failures;
        std::fprintf(stderr, "FAIL %s: in [%s] got [%s] want [%s]\n", what, hex(in).c_str(), hex(got).c_str(),
                     hex(want).c_str());
    }
}

}  // namespace

int main() {
    const std::string R = "\xEF\xBF\xBD";       // U+FFFD
    const std::string party = "\xF0\x9F\x8E\x89";  // U+1F389, an emoji: 4 bytes
    const std::string ni = "\xE4\xBD\xA0";          // U+4F60, CJK: 3 bytes
    const std::string e_acute = "\xC3\xA9";         // U+00E9: 2 bytes

    expect("empty", "", "");
    expect("ascii", "Hello, world!\n", "Hello, world!\n");
    expect("valid mix", "a" + e_acute + ni + party + "z", "a" + e_acute + ni + party + "z");
    // An answer cut by the token cap after 1, 2 or 3 bytes of a 4-byte emoji: one U+FFFD.
    for (size_t k = 1; k < party.size(); ++k) expect("cut emoji", "ok " + party.substr(0, k), "ok " + R);
    for (size_t k = 1; k < ni.size(); ++k) expect("cut CJK", ni + ni.substr(0, k), ni + R);
    expect("cut 2-byte", "caf" + e_acute.substr(0, 1), "caf" + R);
    // A cut character in the middle (a token boundary inside it, then ASCII).
    expect("cut then ascii", party.substr(0, 2) + "x", R + "x");
    // Bytes that are never valid: continuation alone, C0/C1 overlong leads, F5..FF.
    expect("lone continuation", "a\x80" "b", "a" + R + "b");
    expect("two continuations", "\x80\xBF", R + R);
    expect("overlong 2-byte", "\xC0\xAF", R + R);
    expect("F5..FF", "\xF5\xFF", R + R);
    // Overlong 3- and 4-byte forms, a surrogate, and a code point above U+10FFFF: the lead byte
    // alone is the maximal subpart.
    expect("overlong 3-byte", "\xE0\x80\xAF", R + R + R);
    expect("surrogate", "\xED\xA0\x80", R + R + R);
    expect("overlong 4-byte", "\xF0\x80\x80\xAF", R + R + R + R);
    expect("above U+10FFFF", "\xF4\x90\x80\x80", R + R + R + R);
    // A valid prefix followed by a byte that is not a continuation: one U+FFFD, the byte kept.
    expect("broken 3-byte", "\xE4\xBD" "A", R + "A");
    expect("broken 4-byte", "\xF0\x9F\x8E" + ni, R + ni);
    // Idempotent on its own output.
    std::string messy = "\xF0\x9F\x8E" "a\xC3\x28\xE2\x82\xA1\xFF" + ni.substr(0, 2);
    expect("idempotent", pbon::valid_utf8(messy), pbon::valid_utf8(messy));
    if (failures) {
        std::fprintf(stderr, "valid_utf8: %d case(s) failed\n", failures);
        return 1;
    }
    std::printf("valid_utf8: all cases passed\n");
    return 0;
}
