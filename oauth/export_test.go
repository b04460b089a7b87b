package oauth

// SharingFetches is how many requests are at a fetch of an uncached client document or
// waiting on one, for tests that must know a request joined a fetch under way.
func (s *Server) SharingFetches() int { return int(s.sharing.Load()) }
