package main

import (
	"github.com/termgate/termgate/keys"
	"github.com/termgate/termgate/websock"
)

// cookieKeyFile is the login cookies' HMAC key in the state directory.
const cookieKeyFile = "cookie_key"

// loadOrCreateCookieKey returns the key that signs the browser login
// cookies, kept in path so that browser logins survive a restart. Removing
// the file signs every browser out at the next start.
func loadOrCreateCookieKey(path string) ([]byte, bool, error) {
	return keys.LoadOrCreateSecret(path, websock.CookieKeyLen)
}
