import './base.css';
import './proposals.css';
