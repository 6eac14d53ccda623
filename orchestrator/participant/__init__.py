"""Phase 5: the participant over A2A (the client, the swe-sandbox protocol models, tool
hosting) and the reference participants."""
