/*
 * bcryptprimitives.dll for Wine 8.0, which lacks it (Wine added it in 8.13).
 *
 * Rust's standard library (1.78 and later) takes its random seeds from
 * `ProcessPrng` in bcryptprimitives.dll, so every Rust program for Windows fails to
 * start under Debian 12's Wine 8.0 with status c0000135. This stand-in answers
 * `ProcessPrng` with advapi32's RtlGenRandom (SystemFunction036), which Wine 8.0
 * has. scripts/windows-setup builds it with x86_64-w64-mingw32-gcc into the test
 * Wine prefix's system32; it is never shipped and never used on real Windows.
 */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T length)
{
    while (length > 0) {
        ULONG chunk = length > 0x10000000 ? 0x10000000 : (ULONG)length;
        if (!SystemFunction036(data, chunk))
            return FALSE;
        data += chunk;
        length -= chunk;
    }
    return TRUE;
}
