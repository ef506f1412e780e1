// OpenSSL's libcrypto (Debian libssl-dev, which libpq-dev already pulls in): SHA-256 and HMAC-SHA256 only.
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>
